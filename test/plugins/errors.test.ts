import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import { join } from 'node:path'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { ApiError } from '../../src/errors.js'
import { openStore } from '../../src/store/index.js'
import { assertError, buildTestApp, tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

describe('unknown routes and methods', () => {
  it('answers 404 not_found as an Error, outside /v1 without a key and under /v1 after one', async (t) => {
    const ta = await buildTestApp(t)
    for (const url of ['/nope', '/index.html', '/V1/pets', '/v2/pets', '/v1pets', '/healthz/']) {
      assertError(await ta.app.inject({ url }), 404, 'not_found', `no route GET ${url}`)
    }
    for (const url of ['/v1', '/v1/', '/v1/nothing', '/v1/pets/1/photos', '/v1//pets', '/v1/store']) {
      assertError(await ta.app.inject({ url, headers: ta.auth }), 404, 'not_found', `no route GET ${url}`)
    }
    assertError(await ta.app.inject({ url: '/v1/nothing?x=1', headers: ta.auth }), 404, 'not_found', 'no route GET /v1/nothing')
  })

  it('answers 405 method_not_allowed with Allow when only the method is wrong', async (t) => {
    const ta = await buildTestApp(t)
    const cases: Array<[string, string, string, boolean]> = [
      ['DELETE', '/v1/pets', 'GET, HEAD, POST', true],
      ['PUT', '/v1/pets', 'GET, HEAD, POST', true],
      ['PUT', '/v1/pets/1', 'GET, HEAD', true],
      ['DELETE', '/v1/pets/1', 'GET, HEAD', true],
      ['POST', '/v1/pets/1', 'GET, HEAD', true],
      ['POST', '/v1/store/orders', 'GET, HEAD', true],
      ['PATCH', '/v1/store/orders', 'GET, HEAD', true],
      ['POST', '/healthz', 'GET, HEAD', false],
      ['DELETE', '/readyz', 'GET, HEAD', false],
      // A petId longer than find-my-way's default parameter cap (100): the path is still getPet's.
      ['DELETE', `/v1/pets/${'1'.repeat(500)}`, 'GET, HEAD', true],
      ['POST', `/v1/pets/${'9'.repeat(4000)}`, 'GET, HEAD', true]
    ]
    for (const [method, url, allow, needsKey] of cases) {
      const res = await ta.app.inject({ method: method as 'GET', url, headers: needsKey ? ta.auth : {} })
      assertError(res, 405, 'method_not_allowed', `${method} is not allowed on ${url}; allowed: ${allow}`)
      assert.equal(res.headers.allow, allow)
    }
  })

  it('answers a path with broken percent-encoding in the Error shape', async (t) => {
    const ta = await buildTestApp(t)
    const message = 'the request path is not valid percent-encoded UTF-8'
    assertError(await ta.app.inject({ url: '/%zz' }), 400, 'invalid_parameter', message)
    const res = await ta.app.inject({ url: '/v1/pets/%zz', headers: { ...ta.auth, 'x-request-id': 'bad-url-1' } })
    assertError(res, 400, 'invalid_parameter', message)
    assert.equal(res.headers['x-request-id'], 'bad-url-1')
    // It passed through the same plugins as any other /v1 request: hardening, authentication, key counting.
    assert.equal(res.headers['x-content-type-options'], 'nosniff')
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.match(String(res.headers.ratelimit), /^"key";r=\d+;t=\d+$/)
  })

  it('logs and counts a path with broken percent-encoding like any other request, with the URL as sent', async (t) => {
    const lines: string[] = []
    const stream = new Writable({ write (chunk, _enc, done) { lines.push(String(chunk)); done() } })
    const ta = await buildTestApp(t, { logger: { level: 'info', stream } })
    assert.equal((await ta.app.inject({ url: '/v1/%ff?limit=1', headers: { ...ta.auth, 'x-request-id': 'bad-url-2' } })).statusCode, 400)
    const line = lines.map(l => JSON.parse(l) as Record<string, unknown>).find(l => l.reqId === 'bad-url-2')
    assert.ok(line !== undefined, 'no access log line')
    assert.deepEqual([line.msg, line.url, line.status, line.method], ['request completed', '/v1/%ff?limit=1', 400, 'GET'])
    assert.match(await ta.metrics.registry.metrics(), /petstore_http_requests_total\{method="GET",route="unmatched",status="400"\} 1/)
  })
})

describe('request ids', () => {
  it('echoes a well-formed X-Request-Id and replaces anything else', async (t) => {
    const ta = await buildTestApp(t)
    assert.equal((await ta.app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } })).headers['x-request-id'], 'abc-123')
    const replaced = (await ta.app.inject({ url: '/healthz', headers: { 'x-request-id': 'no spaces <allowed>' } })).headers['x-request-id']
    assert.match(String(replaced), /^[0-9a-f-]{36}$/)
    assert.match(String((await ta.app.inject({ url: '/v1/pets' })).headers['x-request-id']), /^[0-9a-f-]{36}$/)
  })
})

describe('unexpected failures', () => {
  it('answer 500 internal_error without internals, and log them with the request id', async (t) => {
    const dir = tempDir(t)
    const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }, dir)
    const store = await openStore(config)
    let logs = ''
    const stream = new Writable({ write (chunk, _enc, done) { logs += String(chunk); done() } })
    const app = await buildApp({ config, store, logger: { level: 'info', stream } })
    onCleanup(t, () => app.close())
    // A real route that fails the way a bug would; the app's one error handler must answer for it.
    app.get('/boom', async () => { throw new TypeError('secret internal detail at /srv/app.js:42') })
    const res = await app.inject({ url: '/boom', headers: { 'x-request-id': 'boom-1' } })
    assertError(res, 500, 'internal_error', 'an unexpected error occurred; it has been logged with the request id')
    assert.equal(res.body.includes('secret'), false)
    const line = logs.split('\n').find(l => l.includes('secret internal detail'))
    assert.ok(line, 'the failure was not logged')
    assert.equal(JSON.parse(line).reqId, 'boom-1')
  })
})

describe('ApiError', () => {
  it('carries no stack frames (a client answer, never logged with one) and leaves other errors theirs', () => {
    const err = new ApiError('validation_failed', 'body field \'name\' is required')
    assert.equal(err.stack, 'ApiError: body field \'name\' is required')
    assert.match(new Error('other').stack ?? '', /\n\s+at /)
  })
})
