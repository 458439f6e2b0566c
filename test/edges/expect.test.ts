import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkResponse } from '../helpers/conformance.js'
import { listeningApp, rawExchange } from '../helpers/raw.js'

/*
 * Expect: 100 Continue only once the request has been authenticated, routed
 * and its declared size checked; any other expectation → 417 in the Error shape.
 */
describe('Expect', () => {
  it('100-continue without a key → 401 at once, no 100 Continue', async (t) => {
    const ta = await listeningApp(t)
    const { responses } = await rawExchange(ta.port, 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30\r\nExpect: 100-continue\r\n\r\n', { count: 1 })
    assert.deepEqual(responses.map(r => r.status), [401])
  })

  it('100-continue with a declared length over the body limit → 413 at once, no 100 Continue', async (t) => {
    const ta = await listeningApp(t)
    const { responses } = await rawExchange(ta.port, `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: 20000000\r\nExpect: 100-continue\r\n\r\n`, { count: 1 })
    assert.deepEqual(responses.map(r => r.status), [413])
    assert.equal(JSON.parse(responses[0]!.body).code, 'payload_too_large')
  })

  it('100-continue on a valid create → 100 Continue, then (body sent) 201', async (t) => {
    const ta = await listeningApp(t)
    const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
    const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`
    const { responses } = await rawExchange(ta.port, [head, body], { count: 1, gapMs: 300 })
    assert.deepEqual(responses.map(r => r.status), [100, 201])
  })

  it('an expectation other than 100-continue → 417 expectation_failed in the Error shape, with every header', async (t) => {
    const ta = await listeningApp(t)
    for (const [path, auth] of [['/v1/pets', true], ['/healthz', false]] as const) {
      const { responses } = await rawExchange(ta.port, `GET ${path} HTTP/1.1\r\nHost: x\r\n${auth ? `Authorization: ${ta.auth.authorization}\r\n` : ''}Expect: 200-ok\r\n\r\n`, { count: 1 })
      const res = responses[0]!
      assert.equal(res.status, 417, res.raw)
      assert.equal(JSON.parse(res.body).code, 'expectation_failed')
      assert.match(res.headers['x-request-id'] ?? '', /./)
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      checkResponse({ method: 'GET', url: path, status: res.status, headers: res.headers, body: res.body })
    }
    // Under /v1 authentication still comes first.
    const { responses } = await rawExchange(ta.port, 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n', { count: 1 })
    assert.equal(responses[0]!.status, 401)
  })

  it('100-continue together with another expectation → 417 at once, no 100 Continue, nothing stored', async (t) => {
    const ta = await listeningApp(t)
    const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
    for (const expect of ['100-continue, foo', 'foo, 100-continue', '100-continue;x=1', '100-continue 100-continue']) {
      const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: ${expect}\r\n\r\n`
      const { responses } = await rawExchange(ta.port, [head, body], { count: 1, gapMs: 100 })
      assert.deepEqual(responses.map(r => r.status), [417], `${expect}: ${responses.map(r => r.raw).join('')}`)
      assert.equal(JSON.parse(responses[0]!.body).code, 'expectation_failed')
    }
    // Its own case and white space around it are still 100-continue.
    const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect:  100-Continue \r\n\r\n`
    const { responses } = await rawExchange(ta.port, [head, body], { count: 1, gapMs: 300 })
    assert.deepEqual(responses.map(r => r.status), [100, 201])
    const list = await ta.app.inject({ url: '/v1/pets', headers: ta.auth })
    assert.equal(list.json().length, 1, 'only the plain 100-continue create was stored')
  })
})
