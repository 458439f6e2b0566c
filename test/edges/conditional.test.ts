import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createPet } from '../helpers/app.js'
import { listeningApp, rawExchange } from '../helpers/raw.js'

/* Conditional requests as RFC 9110 §13 says. */
describe('conditional reads', () => {
  it('304 carries no Content-Length (RFC 9110 §8.6) and no body, on the wire, to GET and HEAD', async (t) => {
    const ta = await listeningApp(t)
    const pet = await createPet(ta, { name: 'Rex', categoryId: 1 })
    for (const [method, path] of [`/v1/pets/${pet.id}`, '/v1/pets', '/openapi.json'].flatMap(p => [['GET', p], ['HEAD', p]] as const)) {
      const first = await ta.app.inject({ url: path, headers: ta.auth })
      const etag = String(first.headers.etag)
      const req = (p: string) => `${method} ${p} HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nIf-None-Match: ${etag}\r\n\r\n`
      // Two on one connection: the second is only read right if the 304 framed nothing.
      const { responses } = await rawExchange(ta.port, req(path) + req(path), { count: 2 })
      assert.deepEqual(responses.map(r => r.status), [304, 304])
      for (const r of responses) {
        assert.equal(r.headers['content-length'], undefined, r.raw)
        assert.equal(r.headers['content-type'], undefined)
        assert.equal(r.headers.etag, etag)
        assert.equal(r.headers['cache-control'], path === '/openapi.json' ? 'public, no-cache' : 'private, no-cache')
        assert.match(r.raw, /\r\n\r\n$/)
      }
    }
  })

  it('If-Match that names no current tag → 412 precondition_failed; a current tag or * → 200', async (t) => {
    const ta = await listeningApp(t)
    const pet = await createPet(ta, { name: 'Rex', categoryId: 1 })
    await createPet(ta, { name: 'Fido', categoryId: 1 })
    // limit=1: a full page with a next Link, served from the read cache after the first read.
    for (const path of [`/v1/pets/${pet.id}`, '/v1/pets?limit=5', '/v1/pets?limit=1']) {
      const first = await ta.app.inject({ url: path, headers: ta.auth })
      const etag = String(first.headers.etag)
      for (const im of ['"stale"', `W/${etag}`]) {
        const res = await ta.app.inject({ url: path, headers: { ...ta.auth, 'if-match': im } })
        assert.equal(res.statusCode, 412, `${path} If-Match: ${im}`)
        assert.deepEqual(res.json(), { code: 'precondition_failed', message: 'If-Match names no current entity tag of this resource: it changed since it was read', status: 412 })
        assert.equal(res.headers.etag, undefined)
        assert.doesNotMatch(String(res.headers.link), /rel="next"/)
        assert.equal(res.headers['cache-control'], 'no-store')
      }
      for (const im of [etag, `"other", ${etag}`, '*']) {
        const res = await ta.app.inject({ url: path, headers: { ...ta.auth, 'if-match': im } })
        assert.equal(res.statusCode, 200, `${path} If-Match: ${im}`)
      }
      // If-Match is evaluated first (RFC 9110 §13.2.2): a failed If-Match is 412 even when If-None-Match would be 304.
      const both = await ta.app.inject({ url: path, headers: { ...ta.auth, 'if-match': '"stale"', 'if-none-match': etag } })
      assert.equal(both.statusCode, 412)
    }
    // A missing pet stays 404: preconditions apply only where the answer would have been 2xx.
    assert.equal((await ta.app.inject({ url: '/v1/pets/999', headers: { ...ta.auth, 'if-match': '"x"' } })).statusCode, 404)
  })
})
