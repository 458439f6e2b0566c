import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.js'

describe('response headers', () => {
  it('sends nosniff everywhere, no-store on authenticated responses, and no X-Powered-By', async (t) => {
    const ta = await buildTestApp(t)
    const created = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth, payload: { name: 'Rex', categoryId: 1 } })
    for (const res of [
      created,
      await ta.app.inject({ url: '/v1/pets', headers: ta.auth }),
      await ta.app.inject({ url: '/v1/pets' }),
      await ta.app.inject({ url: '/healthz' })
    ]) {
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(res.headers['x-powered-by'], undefined)
    }
    assert.equal(created.headers['cache-control'], 'no-store')
  })
})

describe('CORS', () => {
  it('is off by default: no Access-Control headers, preflight not answered', async (t) => {
    const ta = await buildTestApp(t)
    const res = await ta.app.inject({ url: '/v1/pets', headers: { ...ta.auth, origin: 'https://app.example.com' } })
    assert.equal(res.headers['access-control-allow-origin'], undefined)
    const pre = await ta.app.inject({ method: 'OPTIONS', url: '/v1/pets', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' } })
    assert.equal(pre.headers['access-control-allow-origin'], undefined)
  })

  it('allows the CORS_ORIGINS and exposes the headers clients need', async (t) => {
    const ta = await buildTestApp(t, { env: { CORS_ORIGINS: 'https://app.example.com' } })
    const pre = await ta.app.inject({
      method: 'OPTIONS',
      url: '/v1/pets',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' }
    })
    assert.equal(pre.statusCode, 204)
    assert.equal(pre.headers['access-control-allow-origin'], 'https://app.example.com')
    assert.match(String(pre.headers['access-control-allow-headers']), /Idempotency-Key/)
    const res = await ta.app.inject({ url: '/v1/pets', headers: { ...ta.auth, origin: 'https://app.example.com' } })
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com')
    const exposed = String(res.headers['access-control-expose-headers']).toLowerCase().split(/\s*,\s*/)
    for (const h of ['link', 'deprecation', 'sunset', 'x-request-id', 'ratelimit', 'ratelimit-policy', 'retry-after', 'etag', 'location']) {
      assert.ok(exposed.includes(h), `${h} exposed`)
    }
    const foreign = await ta.app.inject({ url: '/v1/pets', headers: { ...ta.auth, origin: 'https://evil.example' } })
    assert.equal(foreign.headers['access-control-allow-origin'], undefined)
    // Unknown paths stay 404 (the preflight catch-all does not make them 405).
    assert.equal((await ta.app.inject({ url: '/nowhere' })).statusCode, 404)
  })
})

describe('server timeouts', () => {
  it('sets headers, request and keep-alive timeouts from the configuration', async (t) => {
    const ta = await buildTestApp(t, { env: { HEADERS_TIMEOUT_MS: '4000', REQUEST_TIMEOUT_MS: '9000', KEEP_ALIVE_TIMEOUT_MS: '7000' } })
    assert.equal(ta.app.server.headersTimeout, 4000)
    assert.equal(ta.app.server.requestTimeout, 9000)
    assert.equal(ta.app.server.keepAliveTimeout, 7000)
  })

  it('cuts a client that sends its headers too slowly with 408', async (t) => {
    const ta = await buildTestApp(t, { env: { HEADERS_TIMEOUT_MS: '1000' } })
    await ta.app.listen({ host: '127.0.0.1', port: 0 })
    const port = (ta.app.server.address() as { port: number }).port
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'))
      let got = ''
      // Keep trickling a header line, never finishing: only the headers timeout ends this.
      const drip = setInterval(() => socket.write('X-Slow: 1\r\n'), 200)
      socket.on('data', (d) => { got += d.toString() })
      socket.on('close', () => { clearInterval(drip); resolve(got) })
      socket.on('error', (err) => { clearInterval(drip); reject(err) })
      setTimeout(() => { clearInterval(drip); socket.destroy(); reject(new Error('not cut within 20 s')) }, 20000).unref()
    })
    assert.match(answer, /^HTTP\/1\.1 408/)
  })
})
