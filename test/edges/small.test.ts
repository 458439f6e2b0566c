import assert from 'node:assert/strict'
import { gunzipSync, brotliDecompressSync } from 'node:zlib'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.js'

/* Small edges of the protocol. */
describe('small edges', () => {
  it('a missing file under /docs/static → 404 (GET is allowed there: the file is what is missing)', async (t) => {
    const ta = await buildTestApp(t)
    const res = await ta.app.inject({ url: '/docs/static/no-such-file.js' })
    assert.equal(res.statusCode, 404, res.body)
    assert.equal(res.json().code, 'not_found')
    assert.equal(res.headers.allow, undefined)
    // Another method there is still 405 with Allow.
    const post = await ta.app.inject({ method: 'POST', url: '/docs/static/no-such-file.js' })
    assert.equal(post.statusCode, 405)
  })

  it('/docs/static/index.html with a query redirects to the page, never to itself', async (t) => {
    const ta = await buildTestApp(t)
    for (const url of ['/docs/static/index.html', '/docs/static/index.html?x=1']) {
      const res = await ta.app.inject({ url })
      assert.ok(res.statusCode >= 300 && res.statusCode < 400, `${url}: ${res.statusCode}`)
      const target = String(res.headers.location)
      assert.notEqual(target.split('?', 1)[0], '/docs/static/index.html', `${url} → ${target}`)
      assert.equal((await ta.app.inject({ url: target })).statusCode, 200, target)
    }
  })

  it('the document and the docs page, asked for all at once first thing, agree; HEAD of the page has its headers', async (t) => {
    const ta = await buildTestApp(t)
    // Both are built on first use (plugins/openapi.ts): concurrent first requests share that one build.
    const [json, yaml, page, fromPage] = await Promise.all(['/openapi.json', '/openapi.yaml', '/docs', '/docs/json'].map(async (url) => await ta.app.inject({ url })))
    for (const res of [json, yaml, page, fromPage]) assert.equal(res!.statusCode, 200, res!.body)
    assert.deepEqual(fromPage!.json(), json!.json())
    assert.match(yaml!.body, /^openapi: 3\.1\.0$/m)
    assert.match(String(page!.headers['content-type']), /^text\/html/)
    assert.match(String(page!.headers['content-security-policy']), /^default-src 'self';/)
    assert.ok(page!.headers['x-request-id'], 'the service\'s own headers are on the page too')
    const head = await ta.app.inject({ method: 'HEAD', url: '/docs' })
    assert.equal(head.statusCode, 200)
    assert.equal(head.body, '')
    assert.equal(head.headers['content-length'], String(page!.rawPayload.length))
  })

  it('/docs/static files: streamed with their length, 304 without Content-Length, the redirect without a made-up type; one docs build', async (t) => {
    const ta = await buildTestApp(t)
    const [a, b] = await Promise.all([ta.app.docsApp(), ta.app.docsApp()])
    assert.equal(a, b, 'concurrent first uses share one build')
    const url = '/docs/static/swagger-ui-bundle.js'
    const js = await ta.app.inject({ url })
    assert.equal(js.statusCode, 200)
    assert.ok(js.rawPayload.length > 100_000, `${js.rawPayload.length} bytes`)
    assert.equal(js.headers['content-length'], String(js.rawPayload.length))
    const head = await ta.app.inject({ method: 'HEAD', url })
    assert.equal(head.statusCode, 200)
    assert.equal(head.body, '')
    assert.equal(head.headers['content-length'], js.headers['content-length'])
    for (const method of ['GET', 'HEAD'] as const) {
      const cached = await ta.app.inject({ method, url, headers: { 'if-none-match': String(js.headers.etag) } })
      assert.equal(cached.statusCode, 304, `${method}: ${cached.statusCode}`)
      assert.equal(cached.body, '')
      assert.equal(cached.headers['content-length'], undefined, `${method}: a 304 claims no length (RFC 9110 §8.6)`)
    }
    const redirect = await ta.app.inject({ url: '/docs/static/index.html' })
    assert.ok(redirect.statusCode >= 300 && redirect.statusCode < 400)
    assert.equal(redirect.headers['content-type'], undefined)
  })

  it('/openapi.json: ETag, revalidation, 304, and gzip or br when the client accepts it', async (t) => {
    const ta = await buildTestApp(t)
    const plain = await ta.app.inject({ url: '/openapi.json' })
    assert.equal(plain.statusCode, 200)
    const etag = String(plain.headers.etag)
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/)
    assert.match(String(plain.headers['cache-control']), /no-cache/)
    assert.match(String(plain.headers.vary), /accept-encoding/i)
    assert.equal(plain.headers['content-encoding'], undefined)
    const gz = await ta.app.inject({ url: '/openapi.json', headers: { 'accept-encoding': 'gzip' } })
    assert.equal(gz.headers['content-encoding'], 'gzip')
    assert.ok(gz.rawPayload.length < plain.rawPayload.length / 4, `${gz.rawPayload.length} of ${plain.rawPayload.length}`)
    assert.equal(gunzipSync(gz.rawPayload).toString(), plain.body)
    assert.notEqual(gz.headers.etag, etag, 'each coding is its own representation')
    const br = await ta.app.inject({ url: '/openapi.json', headers: { 'accept-encoding': 'gzip;q=0.5, br' } })
    assert.equal(br.headers['content-encoding'], 'br')
    assert.equal(brotliDecompressSync(br.rawPayload).toString(), plain.body)
    const none = await ta.app.inject({ url: '/openapi.json', headers: { 'accept-encoding': 'gzip;q=0, identity' } })
    assert.equal(none.headers['content-encoding'], undefined)
    const again = await ta.app.inject({ url: '/openapi.json', headers: { 'if-none-match': etag } })
    assert.equal(again.statusCode, 304)
    assert.equal(again.body, '')
  })

  it('GET /v1/store/orders (501, expected) is not logged as an error, nor with a stack', async (t) => {
    const lines: Array<{ level: number, msg: string, err?: unknown }> = []
    const stream = new Writable({ write (chunk, _enc, cb) { lines.push(JSON.parse(String(chunk))); cb() } })
    const ta = await buildTestApp(t, { logger: { level: 'info', stream } as never })
    const res = await ta.app.inject({ url: '/v1/store/orders', headers: ta.auth })
    assert.equal(res.statusCode, 501)
    assert.deepEqual(lines.filter(l => l.level >= 50), [], JSON.stringify(lines))
    assert.ok(lines.every(l => l.err === undefined), 'no stack for an expected answer')
  })

  it('a body nested too deeply → 400 invalid_json without internal text', async (t) => {
    const ta = await buildTestApp(t, { env: { BODY_LIMIT: '1048576' } })
    for (const inner of ['1', '1234567890123456789']) {
      const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload: '['.repeat(200000) + inner + ']'.repeat(200000) })
      assert.deepEqual(res.json(), { code: 'invalid_json', message: 'request body nests arrays or objects deeper than 64 levels', status: 400 })
    }
  })
})
