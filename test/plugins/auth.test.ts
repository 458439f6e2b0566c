import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import type { InjectOptions } from 'light-my-request'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { STORES, assertError, buildTestApp, tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

const CHALLENGE = 'Bearer realm="petstore"'
const INVALID = 'Bearer realm="petstore", error="invalid_token", error_description="the API key is invalid or revoked"'
const MISSING_MESSAGE = 'missing bearer API key: send Authorization: Bearer <API_KEY>'
const INVALID_MESSAGE = 'the API key is invalid or revoked'
const EXPIRED = 'Bearer realm="petstore", error="invalid_token", error_description="the API key has expired"'
const EXPIRED_MESSAGE = 'the API key has expired'
const UNKNOWN_KEY = 'psk_' + 'A'.repeat(43)

// Requests that, with a valid key, would be answered 400, 404, 405, 413, 415 or 501.
const ANY_V1_REQUEST: Array<{ label: string, req: InjectOptions }> = [
  { label: 'listPets with limit=0', req: { url: '/v1/pets?limit=0' } },
  { label: 'listPets with an unknown parameter', req: { url: '/v1/pets?stauts=sold' } },
  { label: 'createPet with an invalid body', req: { method: 'POST', url: '/v1/pets', headers: { 'content-type': 'application/json' }, payload: '{"id":1}' } },
  { label: 'createPet with malformed JSON', req: { method: 'POST', url: '/v1/pets', headers: { 'content-type': 'application/json' }, payload: '{' } },
  { label: 'createPet with text/plain', req: { method: 'POST', url: '/v1/pets', headers: { 'content-type': 'text/plain' }, payload: 'x' } },
  { label: 'createPet with a body over the limit', req: { method: 'POST', url: '/v1/pets', headers: { 'content-type': 'application/json' }, payload: 'x'.repeat(20000) } },
  { label: 'getPet with petId abc', req: { url: '/v1/pets/abc' } },
  { label: 'getPet of a missing pet', req: { url: '/v1/pets/999999' } },
  { label: 'an unknown route', req: { url: '/v1/nothing/here' } },
  { label: 'the /v1 root', req: { url: '/v1' } },
  { label: 'a wrong method on /v1/pets', req: { method: 'DELETE', url: '/v1/pets' } },
  { label: 'a wrong method on /v1/pets/1', req: { method: 'PUT', url: '/v1/pets/1' } },
  { label: 'GET /v1/store/orders', req: { url: '/v1/store/orders' } },
  { label: 'POST /v1/store/orders', req: { method: 'POST', url: '/v1/store/orders' } },
  { label: 'a path with bad percent-encoding', req: { url: '/v1/pets/%zz' } }
]

for (const store of STORES) {
  describe(`bearer authentication under /v1 [${store}]`, () => {
    it('answers 401 with the plain challenge when no key is sent', async (t) => {
      const ta = await buildTestApp(t, { store })
      const cases: Array<[string, Record<string, string>]> = [
        ['no Authorization header', {}],
        ['another scheme (Basic)', { authorization: 'Basic dXNlcjpwYXNz' }],
        ['a scheme that only starts with Bearer', { authorization: `BearerX ${ta.key}` }],
        ['a bare Bearer', { authorization: 'Bearer' }],
        ['Bearer and spaces only', { authorization: 'Bearer   ' }],
        ['the key without a scheme', { authorization: ta.key }]
      ]
      for (const [label, headers] of cases) {
        await t.test(label, async () => {
          const res = await ta.app.inject({ url: '/v1/pets', headers })
          assertError(res, 401, 'unauthorized', MISSING_MESSAGE)
          assert.equal(res.headers['www-authenticate'], CHALLENGE)
        })
      }
    })

    it('answers 401 with error="invalid_token" when a key is sent but is not valid', async (t) => {
      const ta = await buildTestApp(t, { store })
      const cases: Array<[string, string]> = [
        ['a malformed token (two words)', `Bearer ${ta.key} extra`],
        ['a token with characters outside b64token', 'Bearer psk_{}'],
        ['a key of the wrong shape', 'Bearer psk_short'],
        ['a valid key with a character appended', `Bearer ${ta.key}x`],
        ['a well-formed key that was never issued', `Bearer ${UNKNOWN_KEY}`],
        ['the key in another case', `Bearer ${ta.key.toUpperCase()}`]
      ]
      for (const [label, authorization] of cases) {
        await t.test(label, async () => {
          const res = await ta.app.inject({ url: '/v1/pets', headers: { authorization } })
          assertError(res, 401, 'unauthorized', INVALID_MESSAGE)
          assert.equal(res.headers['www-authenticate'], INVALID)
        })
      }
    })

    it('accepts the scheme name in any case', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
        const res = await ta.app.inject({ url: '/v1/pets', headers: { authorization: `${scheme} ${ta.key}` } })
        assert.equal(res.statusCode, 200, `${scheme}: ${res.body}`)
        assert.deepEqual(res.json(), [])
      }
    })

    it('answers 401 before any validation, lookup, 404 or 405, on every path and method', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const { label, req } of ANY_V1_REQUEST) {
        await t.test(label, async () => {
          const withValidKey = await ta.app.inject({ ...req, headers: { ...req.headers, ...ta.auth } })
          assert.notEqual(withValidKey.statusCode, 401, 'the request must fail for another reason with a valid key')

          const none = await ta.app.inject({ ...req, headers: { ...req.headers } })
          assertError(none, 401, 'unauthorized', MISSING_MESSAGE)
          assert.equal(none.headers['www-authenticate'], CHALLENGE)
          assert.equal(none.headers.allow, undefined)

          const unknown = await ta.app.inject({ ...req, headers: { ...req.headers, authorization: `Bearer ${UNKNOWN_KEY}` } })
          assertError(unknown, 401, 'unauthorized', INVALID_MESSAGE)
          assert.equal(unknown.headers['www-authenticate'], INVALID)
        })
      }
    })

    it('refuses a key revoked elsewhere once the key cache stops trusting it (KEY_CACHE_TTL_MS, at most 1 s), by the app\'s clock', async (t) => {
      let clock = Date.parse('2027-01-01T00:00:00Z')
      const ta = await buildTestApp(t, { store, now: () => clock })
      const ttl = ta.config.keyCacheTtlMs
      assert.ok(ttl > 0 && ttl <= 1000, `KEY_CACHE_TTL_MS ${ttl}`)
      const { key, record } = await createApiKey(ta.store, 'to revoke')
      const auth = { authorization: `Bearer ${key}` }
      assert.equal((await ta.app.inject({ url: '/v1/pets', headers: auth })).statusCode, 200)
      // Revoked in the store behind this instance's back, as the CLI or another instance does.
      assert.equal(await ta.store.revokeApiKey(record.id, new Date(clock)), true)
      clock += ttl - 1
      assert.equal((await ta.app.inject({ url: '/v1/pets', headers: auth })).statusCode, 200, 'trusted until the cache entry ends')
      clock += 1
      const res = await ta.app.inject({ url: '/v1/pets', headers: auth })
      assertError(res, 401, 'unauthorized', INVALID_MESSAGE)
      assert.equal(res.headers['www-authenticate'], INVALID)
      // Other keys are unaffected.
      assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth })).statusCode, 200)
    })

    it('answers a key 401 key_expired from its expiry instant on, by the app\'s clock, whether the key was cached or not', async (t) => {
      let clock = Date.parse('2027-01-01T00:00:00Z')
      const ta = await buildTestApp(t, { store, now: () => clock })
      const expiresAt = clock + 60_000
      const used = await createApiKey(ta.store, 'used before', { expiresAt: new Date(expiresAt) })
      const unseen = await createApiKey(ta.store, 'first seen expired', { expiresAt: new Date(expiresAt) })
      const call = (key: string) => ta.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })
      clock = expiresAt - 1
      assert.equal((await call(used.key)).statusCode, 200)
      // 1 ms later: the cached grant is judged again (its expiry is known), the unseen key is looked up.
      for (const at of [expiresAt, expiresAt + 1, expiresAt + 365 * 86400_000]) {
        clock = at
        for (const key of [used.key, unseen.key]) {
          const res = await call(key)
          assertError(res, 401, 'key_expired', EXPIRED_MESSAGE)
          assert.equal(res.headers['www-authenticate'], EXPIRED)
        }
        assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth })).statusCode, 200, 'a key without expiry works on')
      }
      const refusals = await ta.metrics.registry.getSingleMetricAsString('petstore_auth_refusals_total')
      assert.match(refusals, /petstore_auth_refusals_total\{reason="expired"\} 6$/m)
    })

    it('keeps a key with a scheduled revocation working until that instant, then refuses it, on two instances sharing the store', async (t) => {
      let clock = Date.parse('2027-01-01T00:00:00Z')
      const a = await buildTestApp(t, { store, now: () => clock })
      const b = await buildTestApp(t, { sameDatabaseAs: a, now: () => clock })
      const { key, record } = await createApiKey(a.store, 'old')
      const auth = { authorization: `Bearer ${key}` }
      for (const ta of [a, b]) assert.equal((await ta.app.inject({ url: '/v1/pets', headers: auth })).statusCode, 200)
      const at = clock + 20_000
      assert.equal(await a.store.revokeApiKey(record.id, new Date(at)), true)
      clock = at - 1
      for (const ta of [a, b]) assert.equal((await ta.app.inject({ url: '/v1/pets', headers: auth })).statusCode, 200, 'works until its revocation time')
      for (const when of [at, at + 1]) {
        clock = when
        for (const ta of [a, b]) {
          const res = await ta.app.inject({ url: '/v1/pets', headers: auth })
          assertError(res, 401, 'unauthorized', INVALID_MESSAGE)
          assert.equal(res.headers['www-authenticate'], INVALID)
        }
      }
    })

    it('leaves /healthz and /readyz open', async (t) => {
      const ta = await buildTestApp(t, { store })
      assert.equal((await ta.app.inject({ url: '/healthz' })).statusCode, 200)
      assert.equal((await ta.app.inject({ url: '/readyz' })).statusCode, 200)
    })
  })
}

describe('API keys', () => {
  it('are psk_ plus 256 random bits, stored only as their SHA-256 hash', async (t) => {
    const ta = await buildTestApp(t)
    const second = await createApiKey(ta.store, 'second')
    for (const key of [ta.key, second.key]) assert.match(key, /^psk_[A-Za-z0-9_-]{43}$/)
    assert.notEqual(ta.key, second.key)
    const db = new Database(join(ta.dir, 'petstore.db'), { readonly: true })
    onCleanup(t, () => db.close())
    const dump = JSON.stringify(db.prepare('SELECT * FROM api_keys').all())
    for (const key of [ta.key, second.key]) {
      assert.equal(dump.includes(key), false)
      assert.equal(dump.includes(key.slice(4)), false)
      assert.ok(dump.includes(createHash('sha256').update(key).digest('hex')))
    }
  })

  it('never reach the logs', async (t) => {
    const dir = tempDir(t)
    const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }, dir)
    const store = await openStore(config)
    let logs = ''
    const stream = new Writable({ write (chunk, _enc, done) { logs += String(chunk); done() } })
    const app = await buildApp({ config, store, logger: { level: 'trace', stream } })
    onCleanup(t, () => app.close())
    const { key } = await createApiKey(store, 'logged?')
    assert.equal((await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })).statusCode, 200)
    assert.equal((await app.inject({ url: '/v1/pets/abc', headers: { authorization: `Bearer ${key}x` } })).statusCode, 401)
    assert.ok(logs.length > 0, 'the logger wrote nothing')
    assert.equal(logs.includes(key.slice(4)), false)
  })
})
