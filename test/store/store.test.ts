import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { INT64_MAX, INT64_MIN } from '../../src/schemas/int64.js'
import { migrateStore, openStore } from '../../src/store/index.js'
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js'
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js'
import type { Store } from '../../src/store/store.js'
import { STORES, testDatabaseUrl, type StoreKind } from '../helpers/app.js'

/** `n` store instances over one fresh database, as separate service instances would open it. */
async function openInstances (t: TestContext, kind: StoreKind, n = 1): Promise<Store[]> {
  const config = loadConfig({ DATABASE_URL: await testDatabaseUrl(t, kind) })
  const stores = await Promise.all(Array.from({ length: n }, async () => await openStore(config)))
  // Callers close them in `finally`, before the database is dropped at the test's end.
  return stores
}

async function closeAll (stores: Store[]): Promise<void> {
  await Promise.all(stores.map(async s => await s.close()))
}

describe('migrations', () => {
  it('have the same versions and names on SQLite and PostgreSQL', () => {
    assert.deepEqual(PG_MIGRATIONS.map(m => [m.version, m.name]), SQLITE_MIGRATIONS.map(m => [m.version, m.name]))
  })
})

for (const kind of STORES) {
  describe(`store [${kind}]`, () => {
    it('applies every migration once when several instances start at once, then none', async (t) => {
      const config = loadConfig({ DATABASE_URL: await testDatabaseUrl(t, kind) })
      const runs = await Promise.all([1, 2, 3, 4].map(async () => await migrateStore(config)))
      assert.deepEqual(runs.flat().sort(), SQLITE_MIGRATIONS.map(m => m.version))
      assert.deepEqual(await migrateStore(config), [])
      const stores = await Promise.all([1, 2, 3].map(async () => await openStore(config)))
      await closeAll(stores)
    })

    it('keeps int64 values exact both ways, at both ends of the range', async (t) => {
      const [store] = await openInstances(t, kind)
      try {
        const lo = await store!.createPet({ name: 'lo', categoryId: INT64_MIN, status: 'sold' })
        const hi = await store!.createPet({ name: 'hi', categoryId: INT64_MAX, status: 'pending' })
        assert.equal((await store!.getPet(lo.id))?.categoryId, INT64_MIN)
        assert.equal((await store!.getPet(hi.id))?.categoryId, INT64_MAX)
        assert.equal(typeof hi.id, 'bigint')
        assert.equal(await store!.getPet(INT64_MAX), undefined)
        assert.equal(await store!.getPet(INT64_MIN), undefined)
        const all = await store!.listPets({ afterId: null, limit: 10, status: undefined })
        assert.deepEqual(all.map(p => p.categoryId), [INT64_MIN, INT64_MAX])
        assert.deepEqual(await store!.listPets({ afterId: INT64_MAX, limit: 10, status: undefined }), [])
      } finally {
        await store!.close()
      }
    })

    it('returns a name exactly as given, U+0000 and astral characters included', async (t) => {
      const [store] = await openInstances(t, kind)
      try {
        const name = 'a\u0000b 🐕 é\u00e9 \u200d'
        const pet = await store!.createPet({ name, categoryId: 1n, status: 'available' })
        assert.equal((await store!.getPet(pet.id))?.name, name)
        assert.equal((await store!.listPets({ afterId: null, limit: 1, status: 'available' }))[0]?.name, name)
      } finally {
        await store!.close()
      }
    })

    it('assigns ascending ids in submission order to creates arriving together', async (t) => {
      const [store] = await openInstances(t, kind)
      try {
        const pets = await Promise.all(Array.from({ length: 50 }, async (_, i) => await store!.createPet({ name: `p${i}`, categoryId: BigInt(i), status: 'available' })))
        const ids = pets.map(p => p.id)
        for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `ids ascend: ${ids.join(',')}`)
        for (const p of pets) assert.equal((await store!.getPet(p.id))?.name, p.name)
      } finally {
        await store!.close()
      }
    })

    it('shares keys, their scopes, expiry, revocation and last use, and settings between instances', async (t) => {
      const [a, b] = await openInstances(t, kind, 2)
      try {
        const created = new Date('2026-01-02T03:04:05.678Z')
        const rec = await a!.createApiKey({ name: 'k', hash: 'ab'.repeat(32), createdAt: created })
        assert.deepEqual(await b!.findApiKeyByHash('ab'.repeat(32)), { id: rec.id, scopes: ['pets:read', 'pets:write'], expiresAt: null, revokedAt: null })
        assert.equal(await b!.countApiKeys(), 1)
        const used = new Date('2026-01-03T00:00:00.001Z')
        await a!.touchApiKeys(new Map([[rec.id, used]]))
        await b!.touchApiKeys(new Map([[rec.id, new Date('2026-01-02T23:00:00Z')]])) // older: ignored
        // A revocation only moves earlier: a later time leaves the earlier one, an earlier time replaces it.
        const first = new Date('2026-01-04T00:00:00Z')
        assert.equal(await b!.revokeApiKey(rec.id, new Date('2026-01-06T00:00:00Z')), true)
        assert.equal(await b!.revokeApiKey(rec.id, first), true)
        assert.equal(await a!.revokeApiKey(rec.id, new Date('2026-01-05T00:00:00Z')), true)
        assert.equal(await a!.revokeApiKey(rec.id + 1000, first), false)
        assert.deepEqual(await a!.findApiKeyByHash('ab'.repeat(32)), { id: rec.id, scopes: ['pets:read', 'pets:write'], expiresAt: null, revokedAt: first })
        assert.deepEqual(await a!.listApiKeys(), [{ id: rec.id, name: 'k', scopes: ['pets:read', 'pets:write'], createdAt: created, expiresAt: null, lastUsedAt: used, revokedAt: first }])
        // Scopes and expiry as given, exact to the millisecond on both stores.
        const expires = new Date('2027-02-03T04:05:06.789Z')
        const ro = await b!.createApiKey({ name: 'ro', hash: 'cd'.repeat(32), createdAt: created, scopes: ['pets:read'], expiresAt: expires })
        assert.deepEqual(await a!.findApiKeyByHash('cd'.repeat(32)), { id: ro.id, scopes: ['pets:read'], expiresAt: expires, revokedAt: null })
        assert.deepEqual(ro, { id: ro.id, name: 'ro', scopes: ['pets:read'], createdAt: created, expiresAt: expires, lastUsedAt: null, revokedAt: null })
        const [s1, s2] = await Promise.all([a!.getOrCreateSetting('x', () => 'from-a'), b!.getOrCreateSetting('x', () => 'from-b')])
        assert.equal(s1, s2)
        assert.equal(await b!.getOrCreateSetting('x', () => 'other'), s1)
      } finally {
        await closeAll([a!, b!])
      }
    })

    it('lets a list walk visit every pet exactly once while instances add pets', async (t) => {
      const stores = await openInstances(t, kind, 3)
      try {
        const committed = new Set<bigint>()
        let writing = true
        const writers = Promise.all(stores.map(async (s, w) => {
          for (let i = 0; i < 40; i++) {
            const batch = await Promise.all(Array.from({ length: 1 + (i % 5) }, async (_, j) =>
              await s.createPet({ name: `w${w}-${i}-${j}`, categoryId: BigInt(w), status: j % 2 === 0 ? 'available' : 'sold' })))
            for (const p of batch) committed.add(p.id)
          }
        })).finally(() => { writing = false })
        let walks = 0
        while (writing || walks < 2) {
          const before = new Set(committed)
          const seen: bigint[] = []
          let after: bigint | null = null
          for (;;) {
            const page: Awaited<ReturnType<Store['listPets']>> = await stores[walks % stores.length]!.listPets({ afterId: after, limit: 7, status: undefined })
            seen.push(...page.map(p => p.id))
            if (page.length < 7) break
            after = page[page.length - 1]!.id
          }
          for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, 'a walk sees each pet once, ascending')
          const seenSet = new Set(seen)
          for (const id of before) assert.ok(seenSet.has(id), `pet ${id}, created before the walk began, was skipped`)
          walks++
          // SQLite reads complete synchronously: let the writers' replies in between walks.
          await new Promise(resolve => setImmediate(resolve))
        }
        await writers
        const final = await stores[0]!.listPets({ afterId: null, limit: 100000, status: undefined })
        assert.equal(committed.size, 3 * 120)
        assert.deepEqual(new Set(final.map(p => p.id)), committed)
      } finally {
        await closeAll(stores)
      }
    })
  })
}
