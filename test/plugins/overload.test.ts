import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.js'

function blockEventLoop (ms: number): void {
  const end = Date.now() + ms
  while (Date.now() < end) { /* a CPU-bound stall, as an overloaded process has */ }
}

describe('overload shedding', () => {
  it('answers 503 service_unavailable with Retry-After while the event loop lags past the bound, then recovers', async (t) => {
    const ta = await buildTestApp(t, { env: { EVENT_LOOP_MAX_DELAY_MS: '50' }, pressureSampleIntervalMs: 100 })
    let shed
    for (let i = 0; i < 20 && shed === undefined; i++) {
      blockEventLoop(300)
      await new Promise(resolve => setImmediate(resolve)) // let the overdue delay sample run
      const res = await ta.app.inject({ url: '/v1/pets', headers: ta.auth })
      if (res.statusCode === 503) shed = res
    }
    assert.ok(shed !== undefined, 'never shed a request while the event loop was blocked')
    assert.deepEqual(shed.json(), { code: 'service_unavailable', message: 'the server is overloaded; retry later', status: 503 })
    assert.ok(Number(shed.headers['retry-after']) >= 1)
    assert.match(await ta.metrics.snapshot().getSingleMetricAsString('petstore_overload_rejections_total'), /petstore_overload_rejections_total [1-9]/)

    let recovered = false
    for (let i = 0; i < 50 && !recovered; i++) {
      await new Promise(resolve => setTimeout(resolve, 100))
      recovered = (await ta.app.inject({ url: '/v1/pets', headers: ta.auth })).statusCode === 200
    }
    assert.ok(recovered, 'still shedding after the lag ended')
  })

  it('sheds with CORS\'s headers when CORS is on: a browser can read the 503 and its Retry-After', async (t) => {
    const origin = 'https://app.example.com'
    const ta = await buildTestApp(t, { env: { EVENT_LOOP_MAX_DELAY_MS: '50', CORS_ORIGINS: origin }, pressureSampleIntervalMs: 100 })
    let shed
    for (let i = 0; i < 20 && shed === undefined; i++) {
      blockEventLoop(300)
      await new Promise(resolve => setImmediate(resolve))
      const res = await ta.app.inject({ url: '/v1/pets', headers: { ...ta.auth, origin } })
      if (res.statusCode === 503) shed = res
    }
    assert.ok(shed !== undefined, 'never shed a request while the event loop was blocked')
    assert.equal(shed.json().code, 'service_unavailable')
    assert.equal(shed.headers['access-control-allow-origin'], origin)
    const exposed = String(shed.headers['access-control-expose-headers']).toLowerCase().split(/\s*,\s*/)
    assert.ok(exposed.includes('retry-after') && exposed.includes('x-request-id'), String(shed.headers['access-control-expose-headers']))
    assert.ok(shed.headers['x-request-id'] !== undefined)
  })
})
