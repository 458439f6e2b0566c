import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { listeningApp, rawExchange } from '../helpers/raw.js'

/*
 * The asterisk-form request target (RFC 9112 §3.2.4: `*`, for OPTIONS alone, about the server as a
 * whole), sent as raw bytes: Node's parser and Fastify's router would otherwise see it as a path.
 */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'QUERY', 'TRACE']

describe('the asterisk-form request target (raw sockets)', () => {
  for (const cors of [false, true]) {
    it(`answers OPTIONS * with 204 and the server's methods in Allow, any other method 400 bad_request${cors ? ' (CORS on)' : ''}`, async (t) => {
      const ta = await listeningApp(t, cors ? { CORS_ORIGINS: 'https://app.example' } : {})
      const origin = cors ? 'Origin: https://app.example\r\nAccess-Control-Request-Method: GET\r\n' : ''
      const { responses } = await rawExchange(ta.port, `OPTIONS * HTTP/1.1\r\nHost: x\r\n${origin}X-Request-Id: star-1\r\n\r\n`, { count: 1 })
      const res = responses[0]!
      assert.equal(res.status, 204, res.raw)
      assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS, POST')
      assert.equal(res.body, '')
      assert.equal(res.headers['x-request-id'], 'star-1')
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(res.headers['access-control-allow-origin'], undefined, 'not a CORS preflight')
      for (const method of METHODS) {
        const { responses: [r] } = await rawExchange(ta.port, `${method} * HTTP/1.1\r\nHost: x\r\n${origin}\r\n`, { count: 1 })
        assert.equal(r!.status, 400, `${method} *: ${r!.raw.slice(0, 200)}`)
        assert.equal(r!.headers['x-content-type-options'], 'nosniff')
        if (method !== 'HEAD') assert.deepEqual(JSON.parse(r!.body), { code: 'bad_request', message: `the request target * is only for OPTIONS, not ${method}`, status: 400 })
      }
      // A path is still a path: OPTIONS on one is routed as before.
      const { responses: [path] } = await rawExchange(ta.port, 'OPTIONS /healthz HTTP/1.1\r\nHost: x\r\n\r\n', { count: 1 })
      assert.notEqual(path!.headers.allow, 'GET, HEAD, OPTIONS, POST')
    })
  }
})
