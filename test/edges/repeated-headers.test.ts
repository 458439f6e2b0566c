import assert from 'node:assert/strict'
import { gzipSync } from 'node:zlib'
import { describe, it } from 'node:test'
import { checkResponse } from '../helpers/conformance.js'
import { listeningApp, rawExchange } from '../helpers/raw.js'

/* Repeated and encoded headers. Raw sockets: inject() cannot repeat a header. */
describe('repeated singleton headers', () => {
  for (const [name, line] of [
    ['Host', 'Host: y'],
    ['Authorization', 'Authorization: Bearer psk_not_a_real_key_000000000000000000000000000'],
    ['Content-Type', 'Content-Type: text/plain']
  ] as const) {
    it(`two ${name} headers → 400 bad_request, nothing stored, whatever the order`, async (t) => {
      const ta = await listeningApp(t)
      const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
      const base = ['Host: x', `Authorization: ${ta.auth.authorization}`, 'Content-Type: application/json', `Content-Length: ${body.length}`]
      for (const headers of [[...base, line], [line, ...base]]) {
        const { responses } = await rawExchange(ta.port, `POST /v1/pets HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n${body}`, { count: 1 })
        const res = responses[0]!
        assert.equal(res.status, 400, res.raw)
        assert.deepEqual(JSON.parse(res.body), { code: 'bad_request', message: `the ${name.toLowerCase()} header must be sent once`, status: 400 })
        checkResponse({ method: 'POST', url: '/v1/pets', status: res.status, headers: res.headers, body: res.body })
      }
      assert.equal((await ta.store.listPets({ afterId: null, limit: 10, status: undefined })).length, 0)
    })
  }

  it('two Host headers on a read outside /v1 → 400 too', async (t) => {
    const ta = await listeningApp(t)
    const { responses } = await rawExchange(ta.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n', { count: 1 })
    assert.equal(responses[0]!.status, 400)
  })
})

describe('media type parameters and content codings', () => {
  const post = (ta: { auth: { authorization: string } }, headers: string[], body: Buffer | string) =>
    Buffer.concat([Buffer.from(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\n${headers.join('\r\n')}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`), Buffer.from(body)])

  it('two charset parameters → 415, nothing stored', async (t) => {
    const ta = await listeningApp(t)
    const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
    for (const ct of ['application/json; charset=utf-8; charset=latin1', 'application/json; charset=utf-8; Charset="utf-8"']) {
      const { responses } = await rawExchange(ta.port, post(ta, [`Content-Type: ${ct}`], body), { count: 1 })
      assert.equal(responses[0]!.status, 415, ct)
      assert.deepEqual(JSON.parse(responses[0]!.body), { code: 'unsupported_media_type', message: 'the charset parameter of Content-Type must be given once', status: 415 })
    }
    assert.equal((await ta.store.listPets({ afterId: null, limit: 10, status: undefined })).length, 0)
  })

  it('a body with a Content-Encoding other than identity → 415 naming it; nothing stored (plain or really compressed)', async (t) => {
    const ta = await listeningApp(t)
    const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
    for (const [coding, payload] of [['gzip', body], ['gzip', gzipSync(body)], ['br', body], ['deflate, gzip', body], ['GZIP', body]] as const) {
      const { responses } = await rawExchange(ta.port, post(ta, ['Content-Type: application/json', `Content-Encoding: ${coding}`], payload), { count: 1 })
      const res = responses[0]!
      assert.equal(res.status, 415, `${coding}: ${res.raw}`)
      assert.deepEqual(JSON.parse(res.body), { code: 'unsupported_media_type', message: `Content-Encoding ${coding.toLowerCase()} is not supported; send the body uncompressed (identity)`, status: 415 })
    }
    assert.equal((await ta.store.listPets({ afterId: null, limit: 10, status: undefined })).length, 0)
    // identity is no coding at all.
    const { responses } = await rawExchange(ta.port, post(ta, ['Content-Type: application/json', 'Content-Encoding: identity'], body), { count: 1 })
    assert.equal(responses[0]!.status, 201)
  })
})
