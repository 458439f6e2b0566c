import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { listeningApp, rawExchange } from '../helpers/raw.js'

/*
 * The MUSTs of RFC 9110 and RFC 9112 on the request line, Host, message framing, Expect and
 * preconditions that apply to this server, one row each: the raw bytes a client sends, and the
 * answer the RFC requires (status, Error code, and whether the connection must close). Each row is
 * sent on a fresh connection, as raw bytes, so nothing between the test and the server normalises
 * them. `K` stands for a valid Authorization header.
 */

interface Row {
  /** What the row checks, with the RFC section that requires it. */
  rule: string
  request: string
  status: number
  code?: string
  /** The server must close the connection after the answer. */
  close?: boolean
}

const longTarget = (n: number): string => `/v1/pets?cursor=${'a'.repeat(n - '/v1/pets?cursor='.length)}`
const chunkedBody = '1d\r\n{"name":"Rex","categoryId":1}\r\n0\r\n\r\n'

const ROWS: Row[] = [
  // Request line and target (RFC 9112 §3).
  { rule: '§3.2.1 origin-form has no fragment', request: 'GET /v1/pets/1#x HTTP/1.1\r\nHost: x\r\nK\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§3.2.1 origin-form has no fragment (query)', request: 'GET /v1/pets#x HTTP/1.1\r\nHost: x\r\nK\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§3.2.1 origin-form has no fragment (empty)', request: 'GET /healthz# HTTP/1.1\r\nHost: x\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§3 a target longer than the server parses → 414', request: `GET ${longTarget(8193)} HTTP/1.1\r\nHost: x\r\nK\r\n\r\n`, status: 414, code: 'uri_too_long', close: true },
  { rule: '§3 a target past the 16 KiB head limit → 414', request: `GET ${longTarget(20000)} HTTP/1.1\r\nHost: x\r\nK\r\n\r\n`, status: 414, code: 'uri_too_long', close: true },
  { rule: '§3 a target of 8 KiB is read', request: `GET ${longTarget(8192)} HTTP/1.1\r\nHost: x\r\nK\r\n\r\n`, status: 400, code: 'invalid_parameter' },
  { rule: 'headers past 16 KiB → 431 (RFC 6585)', request: `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17000)}\r\n\r\n`, status: 431, code: 'header_too_large', close: true },
  // Fastify's router reads an absolute-form target by its path and query.
  { rule: '§3.2.2 absolute-form MUST be accepted', request: 'GET http://x/healthz HTTP/1.1\r\nHost: x\r\n\r\n', status: 200 },
  { rule: '§3.2.2 absolute-form, query kept', request: 'GET http://x/v1/pets?limit=1 HTTP/1.1\r\nHost: other\r\nK\r\n\r\n', status: 200 },
  { rule: '§3.2.2 absolute-form with an empty path reads as "/"', request: 'GET http://x?a=1 HTTP/1.1\r\nHost: x\r\n\r\n', status: 200 },
  // Host (RFC 9112 §3.2, RFC 3986 §3.2.2).
  { rule: '§3.2 HTTP/1.1 without Host → 400', request: 'GET /healthz HTTP/1.1\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§3.2 Host twice → 400', request: 'GET /healthz HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n', status: 400, code: 'bad_request', close: true },
  ...['a b', 'user@x', 'x:abc', '[::1', '::1', 'x:80:80', 'x/y', 'x?y', 'x#y', '%zz', '[::g]', '[::1]x', 'a"b', 'a\\b', '[]'].map((host): Row =>
    ({ rule: `§3.2 invalid Host ${JSON.stringify(host)} → 400`, request: `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`, status: 400, code: 'bad_request', close: true })),
  ...['x', 'x:8080', 'x:', 'EXAMPLE.org', '127.0.0.1:80', '[::1]', '[::1]:8080', '[v1.fe]', 'a%41b', "sub-delims!$&'()*+,;=", 'xn--bcher-kva.example', ''].map((host): Row =>
    ({ rule: `§3.2 valid Host ${JSON.stringify(host)}`, request: `GET /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`, status: 200 })),
  { rule: '§3.2 HTTP/1.0 may omit Host', request: 'GET /healthz HTTP/1.0\r\n\r\n', status: 200 },
  { rule: '§3.2 HTTP/1.0 with an invalid Host → 400', request: 'GET /healthz HTTP/1.0\r\nHost: a b\r\n\r\n', status: 400, code: 'bad_request', close: true },
  // Field syntax (RFC 9112 §5, RFC 9110 §5.5).
  { rule: '§5.1 white space between field name and colon → 400', request: 'GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§5.2 obs-fold → 400 (or replaced by SP)', request: 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§2.2 white space before the first field → 400 (or the line ignored)', request: 'GET /healthz HTTP/1.1\r\n X-A: a\r\nHost: x\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§2.2 bare CR → 400 (or replaced)', request: 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: 'RFC 9110 §5.5 NUL in a field value → 400 (or replaced)', request: 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n', status: 400, code: 'bad_request', close: true },
  // Framing (RFC 9112 §6).
  { rule: '§6.1 Transfer-Encoding in HTTP/1.0 → faulty framing, 400, close', request: `POST /v1/pets HTTP/1.0\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedBody}`, status: 400, code: 'bad_request', close: true },
  { rule: '§6.1 Transfer-Encoding in HTTP/1.0, even with Content-Length → 400, close', request: 'POST /v1/pets HTTP/1.0\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n{}', status: 400, code: 'bad_request', close: true },
  { rule: '§6.1 a transfer coding not understood → 501', request: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${chunkedBody}`, status: 501, code: 'not_implemented', close: true },
  { rule: '§6.1 a transfer coding not understood, in a second field line → 501', request: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: x-custom\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedBody}`, status: 501, code: 'not_implemented', close: true },
  { rule: '§7 chunked applied twice, in two field lines → 400', request: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedBody}`, status: 400, code: 'bad_request', close: true },
  { rule: '§7 chunked applied twice → 400', request: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked, chunked\r\n\r\n${chunkedBody}`, status: 400, code: 'bad_request', close: true },
  { rule: '§6.3 chunked not the final coding → 400, close', request: 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked, gzip\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§6.1 Transfer-Encoding with Content-Length → 400 (or TE alone), close', request: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n${chunkedBody}`, status: 400, code: 'bad_request', close: true },
  { rule: '§6.3 invalid Content-Length → 400, close', request: 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nContent-Length: 2a\r\n\r\n{}', status: 400, code: 'bad_request', close: true },
  { rule: '§6.3 Content-Length listing two values → 400, close', request: 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nContent-Length: 2, 3\r\n\r\n{}', status: 400, code: 'bad_request', close: true },
  { rule: '§6.3 Content-Length twice → 400, close', request: 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}', status: 400, code: 'bad_request', close: true },
  { rule: '§7.1 an invalid chunk size → 400, close', request: 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', status: 400, code: 'bad_request', close: true },
  { rule: '§6.1 chunked alone is read', request: `POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nTransfer-Encoding: Chunked\r\n\r\n${chunkedBody}`, status: 201 },
  // Expect (RFC 9110 §10.1.1).
  { rule: 'RFC 9110 §10.1.1 an expectation not understood → 417', request: 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue, foo\r\n\r\n', status: 417, code: 'expectation_failed' },
  { rule: 'RFC 9110 §10.1.1 100-continue in HTTP/1.0 is ignored', request: 'GET /healthz HTTP/1.0\r\nExpect: 100-continue\r\n\r\n', status: 200 },
  // Preconditions (RFC 9110 §13).
  { rule: 'RFC 9110 §13.1.1 If-Match naming no current tag → 412', request: 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nIf-Match: "stale"\r\n\r\n', status: 412, code: 'precondition_failed' },
  { rule: 'RFC 9110 §13.1.1 If-Match: * holds for a resource that exists', request: 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nIf-Match: *\r\n\r\n', status: 200 },
  { rule: 'RFC 9110 §13.1.2 If-None-Match: * on a read of a resource that exists → 304', request: 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nIf-None-Match: *\r\n\r\n', status: 304 },
  { rule: 'RFC 9110 §13.1.1 If-Match on /openapi.json naming no current tag → 412', request: 'GET /openapi.json HTTP/1.1\r\nHost: x\r\nIf-Match: "stale"\r\n\r\n', status: 412, code: 'precondition_failed' },
  { rule: 'RFC 9110 §13.1.1 If-Match on createPet: refused, never ignored (not performed)', request: 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nIf-Match: "stale"\r\nContent-Length: 29\r\n\r\n{"name":"Rex","categoryId":1}', status: 400, code: 'invalid_parameter' },
  { rule: 'RFC 9110 §13.1.2 If-None-Match on createPet: refused, never ignored (not performed)', request: 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nK\r\nContent-Type: application/json\r\nIf-None-Match: *\r\nContent-Length: 29\r\n\r\n{"name":"Rex","categoryId":1}', status: 400, code: 'invalid_parameter' }
]

describe('RFC 9110/9112 MUSTs on the request line, Host, framing, Expect and preconditions (raw sockets)', () => {
  it('answers each row as the RFC requires, and a refused create stores nothing', async (t) => {
    const ta = await listeningApp(t)
    const failures: string[] = []
    for (const row of ROWS) {
      const request = row.request.replace('\r\nK\r\n', `\r\nAuthorization: ${ta.auth.authorization}\r\n`)
      // Rows that must close are read to the end of the connection; the others to their answer.
      let exchange: Awaited<ReturnType<typeof rawExchange>>
      try {
        exchange = await rawExchange(ta.port, request, row.close === true ? { timeoutMs: 3000 } : { count: 1, timeoutMs: 3000 })
      } catch (err) {
        failures.push(`${row.rule}: ${(err as Error).message.slice(0, 160)}`)
        continue
      }
      const { responses, closed, raw } = exchange
      const res = responses.find(r => r.status >= 200)
      const got = res === undefined ? `no answer (${JSON.stringify(raw.slice(0, 120))})` : `${res.status} ${res.status >= 400 ? String(JSON.parse(res.body).code) : ''}`.trim()
      const want = `${row.status} ${row.code ?? ''}`.trim()
      if (got !== want) failures.push(`${row.rule}: got ${got}, want ${want}`)
      else if (row.close === true && !closed) failures.push(`${row.rule}: the connection stayed open`)
      else if (res !== undefined && res.status >= 400 && res.headers['x-content-type-options'] !== 'nosniff') failures.push(`${row.rule}: no nosniff`)
      if (responses.some(r => r.status === 100)) failures.push(`${row.rule}: 100 Continue sent`)
    }
    assert.deepEqual(failures, [])
    const list = await ta.app.inject({ url: '/v1/pets', headers: ta.auth })
    assert.equal(list.json().length, 1, 'only the chunked-alone create was stored')
  })
})
