import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { createPet } from '../helpers/app.js'
import { errorCode, fcParams } from '../helpers/property.js'
import { listeningApp, rawRequest } from '../helpers/raw.js'

const asError = (r: { status: number, headers: Record<string, string>, body: string }) =>
  errorCode({ statusCode: r.status, body: r.body, headers: r.headers })

describe('requests Node\'s HTTP parser refuses are answered with the Error object', () => {
  it('oversized headers → 431 header_too_large', async (t) => {
    const ta = await listeningApp(t)
    const res = await rawRequest(ta.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`)
    assert.equal(res.status, 431)
    assert.equal(asError(res), 'header_too_large')
    assert.equal(res.headers.connection, 'close')
  })

  it('an oversized URL → 414 uri_too_long; oversized headers → 431 header_too_large', async (t) => {
    const ta = await listeningApp(t)
    const res = await rawRequest(ta.port, `GET /v1/pets?cursor=${'a'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`)
    assert.equal(res.status, 414)
    assert.equal(asError(res), 'uri_too_long')
    const headers = await rawRequest(ta.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`)
    assert.equal(headers.status, 431)
    assert.equal(asError(headers), 'header_too_large')
  })

  it('an HTTP/1.1 request without Host → 400 bad_request', async (t) => {
    const ta = await listeningApp(t)
    const res = await rawRequest(ta.port, 'GET /v1/pets HTTP/1.1\r\n\r\n')
    assert.equal(res.status, 400, res.raw)
    assert.equal(asError(res), 'bad_request')
  })

  for (const [what, data] of [
    ['a garbage request line', 'GARBAGE\r\n\r\n'],
    ['a request line with spaces in the target', 'GET /v1/pets x y HTTP/1.1\r\n\r\n'],
    ['a header without a colon', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n'],
    ['a header name with a space', 'GET /v1/pets HTTP/1.1\r\nHo st: x\r\n\r\n'],
    ['a non-numeric Content-Length', 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
    ['Content-Length together with chunked (smuggling)', 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['two different Content-Lengths', 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!'],
    ['a NUL in the request line', 'GET /v1/pets\u0000 HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a CR inside a header value (response splitting attempt)', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\rSet-Cookie: x=1\r\n\r\n'],
    ['a bad chunk size', 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n']
  ] as const) {
    it(`${what} → 400 bad_request`, async (t) => {
      const ta = await listeningApp(t)
      const res = await rawRequest(ta.port, data)
      assert.equal(res.status, 400, res.raw)
      assert.equal(asError(res), 'bad_request')
      assert.ok(!/set-cookie/i.test(Object.keys(res.headers).join(',')))
    })
  }

  it('property: random request bytes never get a 5xx or a non-Error failure', async (t) => {
    const ta = await listeningApp(t)
    const token = fc.oneof(fc.constantFrom('GET', 'POST', 'HEAD', 'PUT', 'get', 'G ET', 'CONNECT', 'PRI', '', ' '), fc.string({ unit: 'binary-ascii', maxLength: 8 }))
    const target = fc.oneof(fc.constantFrom('/v1/pets', '/v1/pets/1', '/healthz', '*', '', '//', '/v1/\\/%zz', 'http://x/v1/pets', '/v1/pets?limit=1%0d%0a'), fc.string({ unit: 'binary-ascii', maxLength: 30 }).map(s => `/${s}`))
    const version = fc.oneof({ arbitrary: fc.constant('HTTP/1.1'), weight: 4 }, fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 ', 'http/1.1', 'HTTP/1', ''))
    const header = fc.oneof(fc.constantFrom('Host: x', 'Content-Length: 2', 'Transfer-Encoding: chunked', 'Expect: 100-continue', 'Content-Type: application/json'), fc.string({ unit: 'binary-ascii', maxLength: 30 }))
    const request = fc.tuple(token, target, version, fc.boolean(), fc.array(header, { maxLength: 4 }), fc.string({ unit: 'binary-ascii', maxLength: 20 }))
      .map(([m, p, v, host, hs, body]) => `${m} ${p} ${v}\r\n${host ? 'Host: x\r\n' : ''}${hs.map(h => `${h}\r\n`).join('')}\r\n${body}`)
    const statuses = new Map<number, number>()
    await fc.assert(fc.asyncProperty(request, async (data) => {
      let res
      try {
        res = await rawRequest(ta.port, Buffer.from(data, 'latin1'), 3000)
      } catch (err) {
        // A request still waiting for more bytes (a Content-Length or chunk not yet sent) gets no answer yet.
        if (/no response within/.test((err as Error).message)) return
        throw err
      }
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      // 505 is the client's fault too: a request line naming a major version other than 1 (RFC 9110 §15.6.6).
      const otherMajor = / HTTP\/(?!1\.)\d/.test(data.split('\r\n', 1)[0]!)
      assert.ok(res.status < 500 || (res.status === 505 && otherMajor), `${res.status} for ${JSON.stringify(data)}: ${res.raw.slice(0, 300)}`)
      if (res.status >= 400 && !data.startsWith('HEAD ')) asError(res)
    }), fcParams(Number(process.env.FC_RUNS ?? 150)))
    t.diagnostic(`random raw requests, statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
  })
})

describe('hostile bodies and queries are harmless', () => {
  it('deeply nested JSON (with and without a long integer) → 400, the server keeps serving', async (t) => {
    const ta = await listeningApp(t, { BODY_LIMIT: '1048576' })
    for (const inner of ['1', '1234567890123456789']) {
      const depth = 200000
      const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload: '['.repeat(depth) + inner + ']'.repeat(depth) })
      assert.equal(res.statusCode, 400, res.body)
      errorCode(res)
    }
    const obj = '{"name":'.repeat(50000) + '"x"' + '}'.repeat(50000)
    const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload: obj })
    assert.equal(res.statusCode, 400)
    assert.equal((await ta.app.inject({ url: '/healthz' })).statusCode, 200)
  })

  it('a body over BODY_LIMIT → 413, whether it declares its length or streams chunked', async (t) => {
    const ta = await listeningApp(t)
    const big = `{"name":"${'x'.repeat(20000)}","categoryId":1}`
    const declared = await rawRequest(ta.port, `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n${big}`)
    assert.equal(declared.status, 413)
    assert.equal(asError(declared), 'payload_too_large')
    const chunks = Array.from({ length: 10 }, () => `${(4000).toString(16)}\r\n${'x'.repeat(4000)}\r\n`).join('')
    const chunked = await rawRequest(ta.port, `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`)
    assert.equal(chunked.status, 413)
    assert.equal(asError(chunked), 'payload_too_large')
    assert.equal((await ta.store.listPets({ afterId: null, limit: 10, status: undefined })).length, 0)
  })

  it('__proto__ and constructor.prototype keys → 400 invalid_json, nothing polluted, nothing stored', async (t) => {
    const ta = await listeningApp(t)
    for (const payload of [
      '{"__proto__":{"isAdmin":true},"name":"a","categoryId":1}',
      '{"name":"a","categoryId":1,"constructor":{"prototype":{"isAdmin":true}}}',
      '{"name":"a","categoryId":1234567890123456789,"__proto__":{"isAdmin":true}}',
      '{"name":"a","categoryId":1,"\\u005f_proto__":{"isAdmin":true}}'
    ]) {
      const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload })
      assert.equal(res.statusCode, 400, payload)
      assert.equal(errorCode(res), 'invalid_json', payload)
    }
    assert.equal(({} as Record<string, unknown>).isAdmin, undefined)
    assert.equal((await ta.store.listPets({ afterId: null, limit: 10, status: undefined })).length, 0)
  })

  it('CR/LF in query values never reaches the Link header: refused, and Link is built only from checked values', async (t) => {
    const ta = await listeningApp(t)
    for (let i = 0; i < 3; i++) await createPet(ta, { name: `p${i}`, categoryId: i })
    for (const q of ['limit=1%0D%0ASet-Cookie:%20x=1', 'limit=1&status=available%0D%0ASet-Cookie:%20x=1', 'limit=1&cursor=abc%0D%0AX:%20y', 'limit=1&x%0D%0Ay=1']) {
      const res = await ta.app.inject({ url: `/v1/pets?${q}`, headers: ta.auth })
      assert.equal(res.statusCode, 400, q)
      assert.equal(res.headers.link, undefined)
      assert.equal(res.headers['set-cookie'], undefined)
    }
    // Over a socket, a raw CR/LF in the request line never reaches routing at all.
    const raw = await rawRequest(ta.port, `GET /v1/pets?limit=1\r\nSet-Cookie: x=1 HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\n\r\n`)
    // (llhttp reads it as a request line without version, then a request header: nothing reaches the response.)
    assert.ok(raw.status < 500, raw.raw)
    assert.ok(!/set-cookie/i.test(raw.raw.split('\r\n\r\n')[0]!), raw.raw)
    const ok = await ta.app.inject({ url: '/v1/pets?limit=1&status=available', headers: ta.auth })
    assert.match(String(ok.headers.link), /^<\/v1\/pets\?limit=1&status=available&cursor=[A-Za-z0-9_-]+>; rel="next"$/)
  })
})
