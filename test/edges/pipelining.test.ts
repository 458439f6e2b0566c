import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkResponse } from '../helpers/conformance.js'
import { listeningApp, rawExchange } from '../helpers/raw.js'

/*
 * A parse error on a later pipelined request must not replace the answer of an
 * earlier one. Over raw sockets: the framing is the point.
 */
describe('pipelined requests followed by bytes the parser refuses', () => {
  it('a create followed in the same write by garbage gets its 201 first, then 400, and is stored once', async (t) => {
    const ta = await listeningApp(t)
    const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
    const post = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
    const { responses, closed } = await rawExchange(ta.port, `${post}GARBAGE\r\n\r\n`)
    assert.deepEqual(responses.map(r => r.status), [201, 400], responses.map(r => r.raw).join('\n---\n'))
    assert.equal(JSON.parse(responses[0]!.body).name, 'Rex')
    assert.equal(JSON.parse(responses[1]!.body).code, 'bad_request')
    assert.equal(responses[1]!.headers.connection, 'close')
    assert.ok(closed, 'the connection is closed after the 400')
    assert.equal((await ta.store.listPets({ afterId: null, limit: 10, status: undefined })).length, 1)
  })

  it('several pipelined requests keep their answers, in order, before the refusal of an oversized header', async (t) => {
    const ta = await listeningApp(t)
    const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
    const get = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
    const post = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
    const list = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\n\r\n`
    const big = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`
    const { responses } = await rawExchange(ta.port, get + post + list + big)
    assert.deepEqual(responses.map(r => r.status), [200, 201, 200, 431], responses.map(r => r.raw.slice(0, 200)).join('\n---\n'))
    // Pipelined requests run concurrently (only their answers are ordered): the list may or may not hold Rex yet.
    assert.ok(Array.isArray(JSON.parse(responses[2]!.body)))
    assert.equal(JSON.parse(responses[3]!.body).code, 'header_too_large')
  })

  it('a bad chunk size in a later request does not replace the earlier answer', async (t) => {
    const ta = await listeningApp(t)
    const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
    const post = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
    const bad = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`
    const { responses } = await rawExchange(ta.port, post + bad)
    assert.deepEqual(responses.map(r => r.status), [201, 400])
    assert.equal((await ta.store.listPets({ afterId: null, limit: 10, status: undefined })).length, 1)
  })
})

describe('answers of the HTTP parser carry what every response carries', () => {
  for (const [what, data, status] of [
    ['garbage', 'GARBAGE\r\n\r\n', 400],
    ['an oversized header', `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`, 431],
    ['two different Content-Lengths', 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!', 400]
  ] as const) {
    it(`${what} → ${status} with Date, X-Request-Id, nosniff and the Error body`, async (t) => {
      const ta = await listeningApp(t)
      const { responses, closed } = await rawExchange(ta.port, data)
      assert.equal(responses.length, 1)
      const res = responses[0]!
      assert.equal(res.status, status)
      assert.ok(!Number.isNaN(Date.parse(res.headers.date ?? '')), `Date: ${res.headers.date}`)
      assert.match(res.headers['x-request-id'] ?? '', /^[A-Za-z0-9._:-]{1,128}$/)
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(JSON.parse(res.body).status, status)
      assert.ok(closed)
      // A parser answer belongs to no operation: the document's answers to unrouted requests describe it.
      checkResponse({ method: 'GET', url: '/nowhere', status: res.status, headers: res.headers, body: res.body })
    })
  }

  it('a request that is not received in time → 408 with the same headers', async (t) => {
    const ta = await listeningApp(t, { REQUEST_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '1000' })
    const { responses } = await rawExchange(ta.port, `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{`, { timeoutMs: 15000 })
    assert.equal(responses[0]?.status, 408)
    assert.equal(responses[0]!.headers['x-content-type-options'], 'nosniff')
    assert.match(responses[0]!.headers['x-request-id'] ?? '', /^[A-Za-z0-9._:-]{1,128}$/)
    assert.ok(responses[0]!.headers.date)
    checkResponse({ method: 'POST', url: '/v1/pets', status: 408, headers: responses[0]!.headers, body: responses[0]!.body })
  })

  it('CONNECT is routed like any other method: 405 with Allow on a listed path, 401 under /v1 without a key, 404 elsewhere', async (t) => {
    const ta = await listeningApp(t)
    const listed = (await rawExchange(ta.port, `CONNECT /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\n\r\n`)).responses[0]!
    assert.equal(listed.status, 405, listed.raw)
    assert.equal(listed.headers.allow, 'GET, HEAD, POST')
    assert.match(listed.headers['x-request-id'] ?? '', /./)
    assert.equal(listed.headers['x-content-type-options'], 'nosniff')
    const noKey = (await rawExchange(ta.port, 'CONNECT /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n')).responses[0]!
    assert.equal(noKey.status, 401)
    const elsewhere = (await rawExchange(ta.port, 'CONNECT /nowhere HTTP/1.1\r\nHost: x\r\n\r\n')).responses[0]!
    assert.equal(elsewhere.status, 404)
    const authority = (await rawExchange(ta.port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')).responses[0]!
    assert.ok([400, 404].includes(authority.status), authority.raw)
    assert.equal(JSON.parse(authority.body).status, authority.status)
  })
})
