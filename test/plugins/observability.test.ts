import assert from 'node:assert/strict'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import Database from 'better-sqlite3'
import { describe, it } from 'node:test'
import { buildMetricsApp } from '../../src/observability/metrics.js'
import { buildTestApp } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

function capture (): { stream: Writable, lines: () => Array<Record<string, unknown>>, text: () => string } {
  const chunks: string[] = []
  const stream = new Writable({ write (chunk, _enc, cb) { chunks.push(String(chunk)); cb() } })
  return { stream, text: () => chunks.join(''), lines: () => chunks.join('').split('\n').filter(Boolean).map(l => JSON.parse(l) as Record<string, unknown>) }
}

describe('logs', () => {
  it('never contain an API key sent in the header, the query or the body', async (t) => {
    const log = capture()
    const ta = await buildTestApp(t, { logger: { level: 'trace', stream: log.stream } })
    const canary = 'psk_CANARYcanaryCANARYcanaryCANARYcanaryCANA' // well-formed, unknown
    const secret = ta.key // a valid key too
    await ta.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${canary}` } })
    await ta.app.inject({ url: `/v1/pets?api_key=${canary}`, headers: ta.auth })
    await ta.app.inject({ url: `/v1/pets?limit=5&token=${canary}&x=${canary}`, headers: ta.auth })
    await ta.app.inject({ url: `/v1/pets/${canary}`, headers: ta.auth })
    await ta.app.inject({ url: `/${canary}` })
    await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth, payload: { name: canary, categoryId: 1, [canary]: canary } })
    await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'idempotency-key': 'k' }, payload: { name: canary, categoryId: 1 } })
    await ta.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${secret}`, 'x-request-id': canary } })
    await ta.app.close()
    const text = log.text()
    assert.ok(log.lines().length >= 8, 'requests were logged')
    assert.ok(!text.includes('CANARY'), 'canary key found in the logs')
    assert.ok(!text.includes(secret.slice(4)), 'valid key found in the logs')
    assert.ok(text.includes('[redacted]'), 'the URL keys were replaced, not dropped silently')
  })

  it('write one JSON line per request with request id, key id, route, status and latency', async (t) => {
    const log = capture()
    const ta = await buildTestApp(t, { logger: { level: 'info', stream: log.stream } })
    const res = await ta.app.inject({ url: '/v1/pets?limit=2', headers: { ...ta.auth, 'x-request-id': 'req-abc.123' } })
    assert.equal(res.headers['x-request-id'], 'req-abc.123')
    const line = log.lines().find(l => l.reqId === 'req-abc.123')
    assert.ok(line !== undefined)
    assert.equal(line.msg, 'request completed')
    assert.equal(line.route, '/v1/pets')
    assert.equal(line.method, 'GET')
    assert.equal(line.status, 200)
    assert.equal(typeof line.ms, 'number')
    assert.equal(line.keyId, (await ta.store.listApiKeys())[0]!.id)
    assert.equal('code' in line, false, 'a success has no error code')

    const generated = await ta.app.inject({ url: '/healthz', headers: { 'x-request-id': 'bad id with spaces\n{"forged":1}' } })
    assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    assert.ok(!log.text().includes('forged'))
  })
})

describe('the access line', () => {
  it('has pino\'s fields in pino\'s order', async (t) => {
    const log = capture()
    const ta = await buildTestApp(t, { logger: { level: 'info', stream: log.stream } })
    await ta.app.inject({ url: '/v1/pets/7', headers: { ...ta.auth, 'x-request-id': 'order-1' } })
    const line = log.lines().find(l => l.reqId === 'order-1')!
    assert.deepEqual(Object.keys(line), ['level', 'time', 'pid', 'hostname', 'reqId', 'keyId', 'method', 'route', 'url', 'status', 'code', 'ms', 'msg'])
    assert.deepEqual([line.level, line.pid, line.route, line.url, line.status, line.code], [30, process.pid, '/v1/pets/:petId', '/v1/pets/7', 404, 'not_found'])
    assert.equal(typeof line.time, 'number')
  })

  it('follows the logger\'s configuration when it changes what pino writes (here the message key)', async (t) => {
    const log = capture()
    const ta = await buildTestApp(t, { logger: { level: 'info', stream: log.stream, messageKey: 'message' } })
    await ta.app.inject({ url: '/v1/pets', headers: { ...ta.auth, 'x-request-id': 'key-1' } })
    const line = log.lines().find(l => l.reqId === 'key-1')!
    assert.equal(line.message, 'request completed')
    assert.equal(line.msg, undefined)
  })

  it('names the Error code of an error answer, whoever answered it', async (t) => {
    const log = capture()
    const ta = await buildTestApp(t, { logger: { level: 'info', stream: log.stream } })
    const answers = [
      [{ url: '/v1/pets', headers: { 'x-request-id': 'c-401' } }, 401, 'unauthorized'],
      [{ url: '/v1/pets/9999', headers: { ...ta.auth, 'x-request-id': 'c-404' } }, 404, 'not_found'],
      [{ url: '/v1/nowhere', headers: { ...ta.auth, 'x-request-id': 'c-nf' } }, 404, 'not_found'],
      [{ method: 'DELETE' as const, url: '/v1/pets', headers: { ...ta.auth, 'x-request-id': 'c-405' } }, 405, 'method_not_allowed'],
      [{ method: 'POST' as const, url: '/v1/pets', headers: { ...ta.auth, 'x-request-id': 'c-400' }, payload: { name: 'Rex' } }, 400, 'validation_failed'],
      // Answered by the not-found handler itself, not through the error handler.
      [{ url: '/docs/static/missing.js', headers: { 'x-request-id': 'c-static' } }, 404, 'not_found']
    ] as const
    for (const [request, status, code] of answers) {
      const res = await ta.app.inject(request)
      assert.equal(res.statusCode, status)
      assert.equal(res.json().code, code)
      const line = log.lines().find(l => l.reqId === request.headers['x-request-id'] && l.msg === 'request completed')
      assert.equal(line?.code, code, JSON.stringify(line))
    }
  })

  it('is not written below the logger\'s level', async (t) => {
    const log = capture()
    const ta = await buildTestApp(t, { logger: { level: 'warn', stream: log.stream } })
    const res = await ta.app.inject({ url: '/v1/pets', headers: { ...ta.auth, 'x-request-id': 'warn-1' } })
    assert.equal(res.statusCode, 200)
    assert.equal(log.text(), '', 'nothing below warn')
  })
})

describe('GET /metrics', () => {
  it('exposes request counts and latency by route and status, getPet calls by key id, store errors', async (t) => {
    const ta = await buildTestApp(t)
    const created = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth, payload: { name: 'Rex', categoryId: 1 } })
    await ta.app.inject({ url: `/v1/pets/${created.json().id}`, headers: ta.auth })
    await ta.app.inject({ url: '/v1/pets/999', headers: ta.auth })
    await ta.app.inject({ url: '/v1/pets' })
    const keyId = (await ta.store.listApiKeys())[0]!.id

    // A store failure is counted: another connection holds the write lock past busy_timeout (SQLITE_BUSY).
    const broken = await buildTestApp(t)
    const locker = new Database(join(broken.dir, 'petstore.db'))
    locker.exec('BEGIN EXCLUSIVE')
    onCleanup(t, () => { if (locker.open) locker.close() })
    const failed = await broken.app.inject({ method: 'POST', url: '/v1/pets', headers: broken.auth, payload: { name: 'Rex', categoryId: 1 } })
    locker.exec('ROLLBACK')
    locker.close()
    assert.equal(failed.statusCode, 503)
    assert.match(await broken.metrics.registry.metrics(), /petstore_store_errors_total\{store="sqlite"\} 1/)

    const metricsApp = buildMetricsApp(ta.metrics)
    onCleanup(t, () => metricsApp.close())
    const res = await metricsApp.inject({ url: '/metrics' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/)
    const body = res.body
    assert.match(body, /petstore_http_requests_total\{method="POST",route="\/v1\/pets",status="201"\} 1/)
    assert.match(body, /petstore_http_requests_total\{method="GET",route="\/v1\/pets\/:petId",status="404"\} 1/)
    assert.match(body, /petstore_http_requests_total\{method="GET",route="\/v1\/pets",status="401"\} 1/)
    assert.match(body, /petstore_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/v1\/pets\/:petId",status="200"\} 1/)
    assert.match(body, new RegExp(`petstore_deprecated_getpet_calls_total\\{key_id="${keyId}"\\} 2`))
    assert.match(body, /# TYPE petstore_rate_limited_total counter/)
    // Not on the API port.
    assert.equal((await ta.app.inject({ url: '/metrics' })).statusCode, 404)
  })
})
