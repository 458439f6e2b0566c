import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey, hashApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { STORES, buildTestApp, type TestApp } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

function post (ta: TestApp, key: string | undefined, body: unknown, auth = ta.auth) {
  return ta.app.inject({
    method: 'POST',
    url: '/v1/pets',
    headers: { ...auth, 'content-type': 'application/json', ...(key !== undefined ? { 'idempotency-key': key } : {}) },
    payload: JSON.stringify(body)
  })
}

async function count (ta: TestApp): Promise<number> {
  return (await ta.store.listPets({ afterId: null, limit: 1000, status: undefined })).length
}

for (const store of STORES) {
  describe(`POST /v1/pets with Idempotency-Key [${store}]`, () => {
    it('replays the original 201 and pet for the same key and body, creating nothing', async (t) => {
      const ta = await buildTestApp(t, { store })
      const first = await post(ta, 'order-1', { name: 'Rex', categoryId: 7 })
      assert.equal(first.statusCode, 201)
      assert.equal(first.headers['idempotent-replayed'], undefined)
      // Same request: other key order, spacing and the default written out.
      const again = await ta.app.inject({
        method: 'POST',
        url: '/v1/pets',
        headers: { ...ta.auth, 'content-type': 'application/json', 'idempotency-key': '"order-1"' },
        payload: '{ "status": "available", "categoryId": 7, "name": "Rex" }'
      })
      assert.equal(again.statusCode, 201)
      assert.equal(again.body, first.body)
      assert.equal(again.headers.location, first.headers.location)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(await count(ta), 1)
    })

    it('answers 422 idempotency_key_reused for the same key with another body, creating nothing', async (t) => {
      const ta = await buildTestApp(t, { store })
      assert.equal((await post(ta, 'k1', { name: 'Rex', categoryId: 7 })).statusCode, 201)
      const res = await post(ta, 'k1', { name: 'Rex', categoryId: 8 })
      assert.equal(res.statusCode, 422)
      assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message', 'status'])
      assert.equal(res.json().code, 'idempotency_key_reused')
      assert.equal(res.json().status, 422)
      assert.equal(await count(ta), 1)
    })

    it('answers 409 idempotency_key_in_use to a duplicate sent while the first is still in flight', async (t) => {
      const ta = await buildTestApp(t, { store })
      const [a, b] = await Promise.all([post(ta, 'same', { name: 'Rex', categoryId: 7 }), post(ta, 'same', { name: 'Rex', categoryId: 7 })])
      assert.deepEqual([a.statusCode, b.statusCode].sort(), [201, 409])
      const conflict = a.statusCode === 409 ? a : b
      assert.equal(conflict.json().code, 'idempotency_key_in_use')
      assert.equal(await count(ta), 1)
      // Once the first finished, the retry replays it.
      const retry = await post(ta, 'same', { name: 'Rex', categoryId: 7 })
      assert.equal(retry.statusCode, 201)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
    })

    it('scopes keys per API key', async (t) => {
      const ta = await buildTestApp(t, { store })
      const other = await createApiKey(ta.store, 'other')
      const a = await post(ta, 'shared', { name: 'A', categoryId: 1 })
      const b = await post(ta, 'shared', { name: 'B', categoryId: 2 }, { authorization: `Bearer ${other.key}` })
      assert.equal(a.statusCode, 201)
      assert.equal(b.statusCode, 201)
      assert.notEqual(a.json().id, b.json().id)
      assert.equal(await count(ta), 2)
    })

    it('does not use up the key when the request fails validation', async (t) => {
      const ta = await buildTestApp(t, { store })
      assert.equal((await post(ta, 'v1', { name: '', categoryId: 7 })).statusCode, 400)
      const ok = await post(ta, 'v1', { name: 'Rex', categoryId: 7 })
      assert.equal(ok.statusCode, 201)
      assert.equal(ok.headers['idempotent-replayed'], undefined)
    })

    it('refuses a malformed key with 400 invalid_parameter', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const bad of ['', 'has space', 'x'.repeat(256), '"unterminated']) {
        const res = await post(ta, bad, { name: 'Rex', categoryId: 7 })
        assert.equal(res.statusCode, 400, bad)
        assert.equal(res.json().code, 'invalid_parameter')
      }
      assert.equal(await count(ta), 0)
    })

    it('keeps a key for 24 hours, then lets it be used again', async (t) => {
      let clock = Date.parse('2027-01-01T00:00:00Z')
      const ta = await buildTestApp(t, { store, now: () => clock })
      const first = await post(ta, 'daily', { name: 'Rex', categoryId: 7 })
      clock += 24 * 3600000 - 1000
      const replay = await post(ta, 'daily', { name: 'Rex', categoryId: 7 })
      assert.equal(replay.json().id, first.json().id)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      clock += 2000
      const fresh = await post(ta, 'daily', { name: 'Rex', categoryId: 7 })
      assert.equal(fresh.statusCode, 201)
      assert.notEqual(fresh.json().id, first.json().id)
      assert.equal(await ta.store.purgeIdempotencyKeys(new Date(clock + 25 * 3600000)), 1)
    })

    it('holds across instances and restarts: the record is in the database with the pet', async (t) => {
      const a = await buildTestApp(t, { store })
      const b = await buildTestApp(t, { sameDatabaseAs: a })
      const first = await post(a, 'cross', { name: 'Rex', categoryId: 7 })
      const onB = await post(b, 'cross', { name: 'Rex', categoryId: 7 }, a.auth)
      assert.equal(onB.statusCode, 201)
      assert.equal(onB.json().id, first.json().id)
      assert.equal(onB.headers['idempotent-replayed'], 'true')
      assert.equal((await post(b, 'cross', { name: 'Other', categoryId: 7 }, a.auth)).statusCode, 422)

      // Both instances racing with one new key create one pet between them.
      const racing = await Promise.all([post(a, 'race', { name: 'R', categoryId: 1 }), post(b, 'race', { name: 'R', categoryId: 1 }, a.auth)])
      assert.deepEqual(racing.map(r => r.statusCode), [201, 201])
      assert.equal(racing[0]!.json().id, racing[1]!.json().id)
      assert.equal(await count(a), 2)

      // A fresh process on the same database sees the record.
      const config = loadConfig({ DATABASE_URL: a.databaseUrl }, a.dir)
      const fresh = await openStore(config)
      onCleanup(t, () => fresh.close())
      const keyId = (await fresh.findApiKeyByHash(hashApiKey(a.key)))!.id
      const again = await fresh.createPetIdempotent({ name: 'Rex', categoryId: 7n, status: 'available' }, {
        apiKeyId: keyId, key: 'cross', fingerprint: 'different', now: new Date(), expiredBefore: new Date(Date.now() - 86400000)
      })
      assert.deepEqual(again, { outcome: 'mismatch' })
    })
  })
}
