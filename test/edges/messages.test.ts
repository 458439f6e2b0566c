import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { listeningApp, rawRequest } from '../helpers/raw.js'

/*
 * Error messages built from what the client sent: a name the client chose is looked up in Maps (or
 * own properties), never on a plain object whose prototype answers `toString`, `constructor`, …; and
 * every message names what is wrong, even when the name is empty.
 */
describe('messages built from client input', () => {
  it('a body field named like an Object.prototype member is named, with the usual rule, and no source text', async (t) => {
    const ta = await listeningApp(t)
    for (const field of ['toString', 'constructor', 'valueOf', 'hasOwnProperty', '__defineGetter__', 'isPrototypeOf']) {
      const body = `{"name":"a","categoryId":1,"${field}":1}`
      const res = await rawRequest(ta.port, `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
      assert.equal(res.status, 400, res.raw)
      const error = JSON.parse(res.body)
      assert.equal(error.code, 'validation_failed', `${field}: ${error.code} ${error.message}`)
      assert.equal(error.message, `body field '${field}' is not allowed (allowed fields are name, categoryId, status)`)
    }
    const res = await rawRequest(ta.port, `GET /v1/pets?toString=1 HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\n\r\n`)
    assert.equal(JSON.parse(res.body).message, "query parameter 'toString' is not supported; supported parameters are limit, status, cursor")
  })

  it('a query parameter with an empty name is named as such', async (t) => {
    const ta = await listeningApp(t)
    for (const query of ['=', '=1', 'limit=5&=x']) {
      const res = await rawRequest(ta.port, `GET /v1/pets?${query} HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\n\r\n`)
      assert.equal(res.status, 400, res.raw)
      assert.deepEqual(JSON.parse(res.body), { code: 'invalid_parameter', status: 400, message: 'query parameter with an empty name is not supported; supported parameters are limit, status, cursor' }, query)
    }
  })

  it('a body field with an empty name is named as such', async (t) => {
    const ta = await listeningApp(t)
    const body = '{"name":"a","categoryId":1,"":1}'
    const res = await rawRequest(ta.port, `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    assert.equal(JSON.parse(res.body).message, 'body field with an empty name is not allowed (allowed fields are name, categoryId, status)')
  })
})
