import assert from 'node:assert/strict'
import { METHODS } from 'node:http'
import { describe, it } from 'node:test'
import { listeningApp, rawExchange } from '../helpers/raw.js'

/*
 * 404 for an unknown path and 405 (with Allow) for a listed path are decided
 * before any body is read, parsed or limited, for every method Node's parser accepts.
 */
describe('404 and 405 come before the body', () => {
  it('QUERY without Content-Type → 405 on a listed path, 404 elsewhere (not Fastify\'s own 400)', async (t) => {
    const ta = await listeningApp(t)
    for (const [path, status, auth] of [['/v1/pets', 405, true], ['/healthz', 405, false], ['/nowhere', 404, false], ['/v1/nowhere', 404, true]] as const) {
      const { responses } = await rawExchange(ta.port, `QUERY ${path} HTTP/1.1\r\nHost: x\r\n${auth ? `Authorization: ${ta.auth.authorization}\r\n` : ''}Content-Length: 2\r\n\r\n{}`, { count: 1 })
      assert.equal(responses[0]!.status, status, `${path}: ${responses[0]!.raw}`)
    }
  })

  it('a body that would be refused (empty, broken JSON, too large, wrong type) does not change 404/405', async (t) => {
    const ta = await listeningApp(t)
    const big = 'x'.repeat(20000)
    for (const [method, path, ct, body, status] of [
      ['DELETE', '/v1/pets/1', 'application/json', '', 405],
      ['PUT', '/v1/pets/1', 'application/json', '{"broken', 405],
      ['PATCH', '/v1/pets', 'text/plain', 'hello', 405],
      ['POST', '/nonexistent', 'application/json', big, 404],
      ['POST', '/v1/nonexistent', 'application/json', big, 404],
      ['POST', '/healthz', 'application/json', big, 405]
    ] as const) {
      const auth = path.startsWith('/v1') ? `Authorization: ${ta.auth.authorization}\r\n` : ''
      const { responses } = await rawExchange(ta.port, `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: ${ct}\r\nContent-Length: ${body.length}\r\n\r\n${body}`, { count: 1 })
      const res = responses[0]!
      assert.equal(res.status, status, `${method} ${path}: ${res.raw.slice(0, 300)}`)
      assert.equal(JSON.parse(res.body).code, status === 404 ? 'not_found' : 'method_not_allowed')
    }
  })

  it('every method Node accepts gets 404 on an unknown path and 405 with Allow on a listed one, whatever its body', async (t) => {
    const ta = await listeningApp(t)
    for (const method of METHODS) {
      if (['GET', 'HEAD', 'POST'].includes(method)) continue
      for (const [path, status] of [['/v1/pets', 405], ['/v1/pets/1', 405], ['/v1/nowhere', 404]] as const) {
        const { responses } = await rawExchange(ta.port, `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{"a":[1`, { count: 1 })
        const res = responses[0]!
        assert.equal(res.status, status, `${method} ${path}: ${res.raw.slice(0, 300)}`)
        if (status === 405) assert.equal(res.headers.allow, path === '/v1/pets' ? 'GET, HEAD, POST' : 'GET, HEAD', `${method} ${path}`)
      }
    }
  })
})
