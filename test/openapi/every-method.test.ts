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
    const paths = [...documented, '/v1/nowhere', '/nowhere', '/v1', '/', '/openapi.json', '/docs/static/no-such-file.js']
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
})
