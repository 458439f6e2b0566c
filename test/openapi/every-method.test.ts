import assert from 'node:assert/strict'
import { METHODS } from 'node:http'
import { describe, it } from 'node:test'
import { checkResponse } from '../helpers/conformance.js'
import { listeningApp, rawExchange } from '../helpers/raw.js'

/*
 * The served document against the wire, for every method Node's parser accepts (http.METHODS,
 * CONNECT included) on every documented path, unknown paths in and outside /v1, and the
 * documentation routes, with and without a key and with a body: each answer's status, headers and
 * body must be documented, by the operation it matched or by the document's x-unrouted-requests.
 */
describe('every method on every kind of path: nothing undocumented', () => {
  it('status, headers and body documented for each answer; never a 500', async (t) => {
    const ta = await listeningApp(t)
    const doc = JSON.parse((await ta.app.inject({ url: '/openapi.json' })).body)
    assert.ok(doc['x-unrouted-requests'], 'the served document describes unrouted requests')
    const documented = Object.keys(doc.paths).map((p) => (p.startsWith('/pets') || p.startsWith('/store') ? `/v1${p}` : p).replace(/\{[^}]+\}/g, '1'))
    const paths = [...documented, '/v1/nowhere', '/nowhere', '/v1', '/', '/openapi.json', '/docs/static/no-such-file.js', '/v1/pets/%zz', '/v1/%zz']
    const statuses = new Map<number, number>()
    let checked = 0
    for (const method of METHODS) {
      for (const path of paths) {
        for (const auth of path.startsWith('/v1') ? [true, false] : [false]) {
          const body = method === 'GET' || method === 'HEAD' ? '' : '{}'
          const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth ? `Authorization: ${ta.auth.authorization}\r\n` : ''}` +
            (body === '' ? '' : `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`) + '\r\n'
          const { responses } = await rawExchange(ta.port, head + body, { count: 1 })
          const res = responses.find((r) => r.status >= 200)
          assert.ok(res !== undefined, `${method} ${path}: no answer`)
          assert.notEqual(res.status, 500, `${method} ${path}: ${res.raw.slice(0, 300)}`)
          checkResponse({ method, url: path, status: res.status, headers: res.headers, body: res.body })
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
          checked++
        }
      }
    }
    t.diagnostic(`${checked} raw requests over ${METHODS.length} methods × ${paths.length} paths: statuses ${JSON.stringify(Object.fromEntries(statuses))}`)
  })

  /*
   * The answers that come from the edges rather than from an operation's own logic, each asked of
   * every kind of path with the methods that reach different code (body or not, HEAD, CONNECT, an
   * extension method): preconditions, expectations, codings, sizes, repeated headers.
   */
  it('edge answers (304, 412, 413, 415, 417, repeated headers) documented on every kind of path', async (t) => {
    const ta = await listeningApp(t)
    const doc = JSON.parse((await ta.app.inject({ url: '/openapi.json' })).body)
    const documented = Object.keys(doc.paths).map((p) => (p.startsWith('/pets') || p.startsWith('/store') ? `/v1${p}` : p).replace(/\{[^}]+\}/g, '1'))
    await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload: { name: 'Rex', categoryId: 1 } })
    const paths = [...documented, '/v1/nowhere', '/nowhere', '/openapi.json', '/v1/pets/%zz']
    const json = 'Content-Type: application/json\r\n'
    const variants: Array<[string, string, string]> = [
      ['If-None-Match: *', 'If-None-Match: *\r\n', ''],
      ['If-Match stale', 'If-Match: "stale"\r\n', ''],
      ['Expect: 200-ok', 'Expect: 200-ok\r\n', ''],
      ['gzip body', `${json}Content-Encoding: gzip\r\nContent-Length: 2\r\n`, '{}'],
      ['two charsets', 'Content-Type: application/json; charset=utf-8; charset=utf-8\r\nContent-Length: 2\r\n', '{}'],
      ['declared length over the limit', `${json}Expect: 100-continue\r\nContent-Length: 100000000\r\n`, ''],
      ['two Authorization headers', `Authorization: ${ta.auth.authorization}\r\n`, ''],
      ['two Content-Type headers', `${json}${json}Content-Length: 2\r\n`, '{}']
    ]
    const statuses = new Map<number, number>()
    let checked = 0
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'QUERY', 'CONNECT', 'PROPFIND']) {
      for (const path of paths) {
        for (const [what, headers, body] of variants) {
          const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\n${headers}\r\n`
          const { responses } = await rawExchange(ta.port, head + body, { count: 1 })
          const res = responses.find((r) => r.status >= 200)
          const where = `${method} ${path} (${what})`
          assert.ok(res !== undefined, `${where}: no answer`)
          assert.notEqual(res.status, 500, `${where}: ${res.raw.slice(0, 300)}`)
          checkResponse({ method, url: path, status: res.status, headers: res.headers, body: res.body })
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
          checked++
        }
      }
    }
    // Each edge answer was met at least once: the check above covered them, not just 404s.
    for (const status of [304, 400, 412, 413, 415, 417]) assert.ok(statuses.has(status), `no ${status} among ${JSON.stringify(Object.fromEntries(statuses))}`)
    t.diagnostic(`${checked} raw requests with edge headers: statuses ${JSON.stringify(Object.fromEntries(statuses))}`)
  })
})
