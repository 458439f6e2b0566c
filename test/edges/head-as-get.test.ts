import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { createPet } from '../helpers/app.js'
import { fcParams } from '../helpers/property.js'
import { listeningApp, rawRequest, type RawResponse } from '../helpers/raw.js'

/*
 * RFC 9110 §9.3.2: the server sends the same header fields in answer to HEAD as it would to GET,
 * and a Content-Length that is the length GET's body would have. Generated over raw sockets: every
 * kind of target the service answers (operations, refusals, documents, the docs page's files, the
 * asterisk form, unknown paths and methods' targets), with and without a key, conditions, codings
 * and ranges. Date and X-Request-Id differ by design; everything else must be equal.
 */
const RUNS = Number(process.env.FC_RUNS ?? 300)
const PER_REQUEST = new Set(['date', 'x-request-id'])

const target = fc.oneof(
  fc.constantFrom('/', '/healthz', '/readyz', '/openapi.json', '/openapi.yaml', '/docs', '/docs/', '/docs/json',
    '/docs/static/index.html', '/docs/static/swagger-ui.css', '/docs/static/nope.js', '/v1', '/v1/pets', '/v1/orders',
    '/v1/pets?limit=1', '/v1/pets?limit=0', '/v1/pets?limit=007', '/v1/pets?status=sold', '/v1/pets?cursor=x',
    '/v1/pets?bogus=1', '/v1/pets/1', '/v1/pets/2', '/v1/pets/999999', '/v1/pets/abc', '/v1/pets/-0', '/v1/nope',
    '/nope', '/v1/pets/1/x', '*', '/%zz', '/v1/%zz', '//', 'http://x/healthz', '*?x', 'http://x:99999/healthz'),
  fc.string({ unit: 'binary-ascii', maxLength: 12 }).map(s => `/v1/pets/${encodeURIComponent(s)}`)
)
const headerSets = fc.record({
  key: fc.boolean(),
  accept: fc.constantFrom(undefined, 'text/html', 'application/json', '*/*'),
  encoding: fc.constantFrom(undefined, 'gzip', 'br', 'x-gzip', 'identity;q=0', 'gzip;q=0, br;q=0'),
  inm: fc.constantFrom(undefined, '*', '"nope"'),
  im: fc.constantFrom(undefined, '*', '"nope"'),
  range: fc.constantFrom(undefined, 'bytes=0-9', 'bytes=99999999-')
}, { requiredKeys: ['key'] })

describe('HEAD answers with the headers GET would (RFC 9110 §9.3.2), generated over raw sockets', () => {
  it(`${RUNS} targets with varied headers: same status and header fields; Content-Length is GET's body length`, async (t) => {
    // No address limit: a pair's GET must not use up the budget its HEAD then meets.
    const ta = await listeningApp(t, { RATE_LIMIT_ANON_MAX: '0' })
    for (let i = 0; i < 3; i++) await createPet(ta, { name: `p${i}`, categoryId: i })
    const send = async (method: 'GET' | 'HEAD', path: string, h: Record<string, string | undefined>): Promise<RawResponse> => {
      const lines = Object.entries(h).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}: ${v}\r\n`).join('')
      return await rawRequest(ta.port, `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${lines}\r\n`)
    }
    await fc.assert(fc.asyncProperty(target, headerSets, async (path, h) => {
      const headers = {
        authorization: h.key ? ta.auth.authorization : undefined,
        accept: h.accept,
        'accept-encoding': h.encoding,
        'if-none-match': h.inm,
        'if-match': h.im,
        range: h.range
      }
      const get = await send('GET', path, headers)
      const head = await send('HEAD', path, headers)
      const where = `${path} ${JSON.stringify(headers)}`
      assert.equal(head.status, get.status, where)
      assert.equal(head.body, '', `${where}: HEAD sent a body`)
      const names = (r: RawResponse) => Object.keys(r.headers).filter(n => !PER_REQUEST.has(n)).sort()
      assert.deepEqual(names(head), names(get), where)
      for (const name of names(get)) {
        if (name === 'content-length') continue
        // The RateLimit window's remaining count moves with each request.
        if (name === 'ratelimit') continue
        assert.equal(head.headers[name], get.headers[name], `${where}: ${name}`)
      }
      assert.equal(head.headers['content-length'], get.headers['content-length'], where)
      // A text body read whole is exactly as long as GET said (a compressed one is not text).
      if (get.headers['content-length'] !== undefined && get.headers['content-encoding'] === undefined) {
        assert.equal(Buffer.byteLength(get.body), Number(get.headers['content-length']), `${where}: GET's Content-Length is its body`)
      }
    }), fcParams(RUNS))
  })
})
