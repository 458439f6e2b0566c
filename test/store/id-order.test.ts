/*
 * The read cache (src/http/representations.ts) rests on one property of every store: pet ids become
 * visible in id order, database-wide. On PostgreSQL that is the pet insert lock's work
 * (PET_INSERT_LOCK_KEY): the first suite holds one instance's insert, its id drawn, before its
 * commit, and checks that another instance's create waits for it rather than committing a larger
 * id first; it fails without the lock every time. The second suite, on every store, lets several
 * instances create at once, in many small batches, with and without Idempotency-Keys, while a reader
 * keeps listing every pet; each snapshot must be a prefix of the final list.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import pg from 'pg'
import { loadConfig } from '../../src/config/index.js'
import { openStore } from '../../src/store/index.js'
import { PET_INSERT_LOCK_KEY } from '../../src/store/postgres/index.js'
import type { Store } from '../../src/store/store.js'
import { PG_ROUTES, STORES, testClusterUrl, testDatabaseUrl } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

/** A row trigger holds an insert of a pet named 'held', its id drawn, until the test releases HOLD_KEY. */
const HOLD_KEY = 4242

/** How many backends wait for the advisory lock `key` (pg_locks splits an int8 key in two oids). */
async function waitingFor (admin: pg.Client, key: bigint): Promise<number> {
  const r = await admin.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND objid = $2 AND objsubid = 1",
    [String(key >> 32n), String(key & 0xffffffffn)])
  return r.rows[0]!.n
}

async function until (what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30000
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await sleep(10)
  }
}

for (const route of PG_ROUTES) {
  describe(`pet insert lock [${route}]`, () => {
    for (const keyed of [false, true]) {
      it(`makes a ${keyed ? 'create with an Idempotency-Key' : 'create'} wait while another instance holds a smaller id it has not committed`, async (t) => {
        const url = await testDatabaseUrl(t, route)
        const direct = new URL(url)
        direct.host = new URL(testClusterUrl()).host
        const admin = new pg.Client({ connectionString: direct.href })
        await admin.connect()
        onCleanup(t, async () => await admin.end())
        const config = loadConfig({ DATABASE_URL: url })
        const [first, second] = await Promise.all([1, 2].map(async () => await openStore(config)))
        onCleanup(t, async () => { await Promise.all([first!.close(), second!.close()]) })
        const { id: apiKeyId } = await first!.createApiKey({ name: 'order', hash: 'h'.repeat(64), createdAt: new Date() })
        await admin.query(`
          CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.name = 'held' THEN PERFORM pg_advisory_xact_lock_shared(${HOLD_KEY}); END IF; RETURN NEW; END $$;
          CREATE TRIGGER hold BEFORE INSERT ON pets FOR EACH ROW EXECUTE FUNCTION hold();`)
        await admin.query('SELECT pg_advisory_lock($1)', [HOLD_KEY])

        const held = first!.createPet({ name: 'held', categoryId: 1n, status: 'available' })
        await until('the held insert has drawn its id', async () => await waitingFor(admin, BigInt(HOLD_KEY)) === 1)
        const now = new Date()
        const pet = { name: 'next', categoryId: 1n, status: 'available' as const }
        let done = false
        const next = (keyed
          ? second!.createPetIdempotent(pet, { apiKeyId, key: 'k', fingerprint: 'f', now, expiredBefore: new Date(now.getTime() - 1000) })
          : second!.createPet(pet)).finally(() => { done = true })
        // Either the second create waits for the insert lock (right), or it commits a larger id
        // while the smaller one is not visible (the read cache's ordering broken).
        await until('the second create waits for the insert lock or has committed', async () => done || await waitingFor(admin, PET_INSERT_LOCK_KEY) === 1)
        const seen = (await second!.listPets({ afterId: null, limit: 10, status: undefined })).map(p => p.name)
        assert.deepEqual(seen, [], 'a pet became visible while a smaller id was still uncommitted')
        await admin.query('SELECT pg_advisory_unlock($1)', [HOLD_KEY])
        await Promise.all([held, next])
        assert.deepEqual((await second!.listPets({ afterId: null, limit: 10, status: undefined })).map(p => p.name), ['held', 'next'])
      })
    }
  })
}

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
  describe(`pet id order under concurrent creates [${kind}]`, () => {
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
