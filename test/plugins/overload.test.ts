import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AddressInfo } from 'node:net'
import { buildTestApp } from '../helpers/app.js'
import { rawRequest, type RawResponse } from '../helpers/raw.js'

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
    assert.match(await ta.metrics.registry.getSingleMetricAsString('petstore_overload_rejections_total'), /petstore_overload_rejections_total [1-9]/)

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

  it('sheds the asterisk-form target too: OPTIONS * is 503 while the event loop lags, 204 after', async (t) => {
    // Raw bytes: an injected `*` would reach the router as the path `/*`.
    const ta = await buildTestApp(t, { env: { EVENT_LOOP_MAX_DELAY_MS: '50' }, pressureSampleIntervalMs: 100 })
    await ta.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (ta.app.server.address() as AddressInfo).port
    const optionsStar = async (): Promise<RawResponse> => await rawRequest(port, 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n')
    let shed
    for (let i = 0; i < 20 && shed === undefined; i++) {
      const answer = optionsStar()
      blockEventLoop(300)
      const res = await answer
      if (res.status === 503) shed = res
      else assert.equal(res.status, 204)
    }
    assert.ok(shed !== undefined, 'OPTIONS * never shed while the event loop was blocked')
    assert.equal(JSON.parse(shed.body).code, 'service_unavailable')
    let answered = false
    for (let i = 0; i < 50 && !answered; i++) {
      await new Promise(resolve => setTimeout(resolve, 100))
      answered = (await optionsStar()).status === 204
    }
    assert.ok(answered, 'still shedding after the lag ended')
  })
})
