import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Store } from '../../src/store/store.js'
import { STORES, assertError, buildTestApp } from '../helpers/app.js'

/** The store, with every method call recorded by name (a real store underneath, not a stub). */
function counting (store: Store, calls: string[]): Store {
  return new Proxy(store, {
    get (target, prop) {
      const value: unknown = Reflect.get(target, prop, target)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls.push(String(prop))
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    }
  })
}

const BLOCKED = '203.0.113.9'
const OTHER = '198.51.100.20'
const unknownKey = (i: number): string => 'Bearer psk_' + String(i).padStart(43, 'u') // a new one each time: no cache helps

// Every kind of /v1 URL: routes, an unknown path, the scope root, wrong methods, and paths the router
// cannot percent-decode (which it refuses before any route or hook).
const V1_REQUESTS: Array<{ method: 'GET' | 'POST' | 'DELETE', url: string }> = [
  { method: 'GET', url: '/v1/pets' },
  { method: 'POST', url: '/v1/pets' },
  { method: 'GET', url: '/v1/pets/1' },
  { method: 'GET', url: '/v1/store/orders' },
  { method: 'GET', url: '/v1/nonexistent' },
  { method: 'GET', url: '/v1' },
  { method: 'DELETE', url: '/v1/pets' },
  { method: 'GET', url: '/v1/%ff' },
  { method: 'GET', url: '/v1/pets/%zz' },
  { method: 'POST', url: '/v1/pets/%zz' },
  { method: 'DELETE', url: '/v1/%c3%28?limit=1' }
]

for (const store of STORES) {
  describe(`the authentication policy [${store}]`, () => {
    it('counts failed authentications on undecodable URLs like any other, then answers 429 there', async (t) => {
      const ta = await buildTestApp(t, { store, env: { RATE_LIMIT_ANON_MAX: '3' } })
      const codes: number[] = []
      for (let i = 0; i < 5; i++) {
        codes.push((await ta.app.inject({ url: '/v1/%ff', headers: { authorization: unknownKey(i) }, remoteAddress: BLOCKED })).statusCode)
      }
      assert.deepEqual(codes, [401, 401, 401, 429, 429])
    })

    it('gives a blocked address 429 on every /v1 URL, decodable or not, without reaching the store', async (t) => {
      const calls: string[] = []
      const ta = await buildTestApp(t, { store, env: { RATE_LIMIT_ANON_MAX: '2' }, wrapStore: s => counting(s, calls) })
      for (let i = 0; i < 3; i++) await ta.app.inject({ url: '/v1/pets', headers: { authorization: unknownKey(i) }, remoteAddress: BLOCKED })
      assert.ok(calls.includes('findApiKeyByHash'), 'the instrumented store saw the lookups of the unknown keys')

      calls.length = 0
      let i = 100
      for (const { method, url } of V1_REQUESTS) {
        for (const authorization of [undefined, unknownKey(i++), ta.auth.authorization]) {
          const headers = authorization === undefined ? {} : { authorization }
          const res = await ta.app.inject({ method, url, headers, remoteAddress: BLOCKED, ...(method === 'POST' ? { payload: { name: 'Rex', categoryId: 1 } } : {}) })
          const label = `${method} ${url} with ${authorization === undefined ? 'no key' : authorization === ta.auth.authorization ? 'a valid key' : 'an unknown key'}`
          assert.equal(res.statusCode, 429, `${label}: ${res.statusCode} ${res.body}`)
          assert.equal(res.json().code, 'rate_limited', label)
          assert.ok(Number(res.headers['retry-after']) >= 1, label)
          assert.equal(res.headers['ratelimit-policy'], '"address";q=2;w=60', label)
        }
      }
      assert.equal(calls.join(', '), '', 'a blocked address reached the store')

      // The instrumented store does count: the same valid key from another address reaches it.
      assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth, remoteAddress: OTHER })).statusCode, 200)
      assert.ok(calls.includes('findApiKeyByHash'), calls.join(', '))
    })

    it('counts a valid key against its own limit on undecodable URLs too', async (t) => {
      const ta = await buildTestApp(t, { store, env: { RATE_LIMIT_MAX: '2' } })
      const bad = await ta.app.inject({ url: '/v1/pets/%zz', headers: ta.auth })
      assertError(bad, 400, 'invalid_parameter', 'the request path is not valid percent-encoded UTF-8')
      assert.equal(bad.headers['ratelimit-policy'], '"key";q=2;w=60')
      assert.match(String(bad.headers.ratelimit), /^"key";r=1;t=\d+$/)
      assert.equal((await ta.app.inject({ url: '/v1/%ff', headers: ta.auth })).statusCode, 400)
      assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth })).statusCode, 429)
    })
  })
}
