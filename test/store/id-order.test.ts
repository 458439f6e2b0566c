/*
 * The read cache (src/services/pet-reads.ts) rests on one property of every store: pet ids become
 * visible in id order, database-wide. This test breaks it if a store ever lets a reader see id N+1
 * while N (which will exist) is still invisible: several store instances over one database create
 * pets concurrently, in many small batches, with and without Idempotency-Keys, while a reader keeps
 * listing every pet; each snapshot must be a prefix of the final list.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { openStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import { STORES, testDatabaseUrl } from '../helpers/app.js'

const INSTANCES = 3
const ROUNDS = 25
const PER_ROUND = 6

async function createRounds (store: Store, instance: number): Promise<void> {
  for (let round = 0; round < ROUNDS; round++) {
    await Promise.all(Array.from({ length: PER_ROUND }, async (_, i) => {
      const pet = { name: `i${instance} r${round} #${i}`, categoryId: BigInt(i), status: 'available' as const }
      if (i % 2 === 0) return await store.createPet(pet)
      const now = new Date()
      const r = await store.createPetIdempotent(pet, { apiKeyId: 1, key: `k-${instance}-${round}-${i}`, fingerprint: 'f', now, expiredBefore: new Date(now.getTime() - 1000) })
      assert.equal(r.outcome, 'created')
      return r
    }))
  }
}

for (const kind of STORES) {
  describe(`pet id order [${kind}]`, () => {
    it('never lets a reader see a pet before every pet with a smaller id, while instances create at once', async (t) => {
      const config = loadConfig({ DATABASE_URL: await testDatabaseUrl(t, kind) })
      const stores = await Promise.all(Array.from({ length: INSTANCES + 1 }, async () => await openStore(config)))
      try {
        const reader = stores[INSTANCES]!
        // Idempotency records refer to an API key.
        await reader.createApiKey({ name: 'order', hash: 'h'.repeat(64), createdAt: new Date() })
        const snapshots: bigint[][] = []
        let writing = true
        const read = (async () => {
          while (writing) {
            snapshots.push((await reader.listPets({ afterId: null, limit: 100000, status: undefined })).map(p => p.id))
            await new Promise(resolve => setImmediate(resolve))
          }
        })()
        try {
          await Promise.all(stores.slice(0, INSTANCES).map(async (s, i) => await createRounds(s, i)))
        } finally {
          writing = false
          await read
        }
        const all = (await reader.listPets({ afterId: null, limit: 100000, status: undefined })).map(p => p.id)
        assert.equal(all.length, INSTANCES * ROUNDS * PER_ROUND)
        const nonEmpty = snapshots.filter(s => s.length > 0 && s.length < all.length)
        assert.ok(nonEmpty.length >= 5, `the reader saw the creates in progress (${nonEmpty.length} partial snapshots)`)
        for (const seen of snapshots) {
          assert.deepEqual(seen, all.slice(0, seen.length), `a reader saw id ${seen.find((id, i) => id !== all[i])} before a smaller id`)
        }
      } finally {
        await Promise.all(stores.map(async s => await s.close()))
      }
    })
  })
}
