import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { loadConfig } from '../../src/config/index.js'
import { etagOf } from '../../src/http/etag.js'
import { Metrics } from '../../src/observability/metrics.js'
import type { Pet } from '../../src/schemas/pets.js'
import { ENTRY_OVERHEAD, PetReads, type Representation } from '../../src/services/pet-reads.js'
import { openStore } from '../../src/store/index.js'
import { readsSynchronously, type Store } from '../../src/store/store.js'
import { STORES, testDatabaseUrl, type StoreKind } from '../helpers/app.js'

async function open (t: TestContext, kind: StoreKind): Promise<Store> {
  const store = await openStore(loadConfig({ DATABASE_URL: await testDatabaseUrl(t, kind, undefined) }))
  return store
}

const render = (pets: Pet | Pet[], last?: Pet): Representation => {
  const body = JSON.stringify(pets, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))
  return { body, bytes: Buffer.byteLength(body), etag: `"${body.length}"`, link: last === undefined ? undefined : `after ${last.id}` }
}
const ids = (rep: Representation | undefined) => (JSON.parse(String(rep?.body)) as Array<{ id: number }>).map(p => p.id)

/** The read cache series of a registry, e.g. { 'hits_total:pet': 1, bytes: 600 } (those that are not 0). */
async function counts (metrics: Metrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const m of await metrics.snapshot().getMetricsAsJSON()) {
    if (!m.name.startsWith('petstore_read_cache_')) continue
    for (const v of m.values) {
      if (v.value !== 0) out[`${m.name.slice('petstore_read_cache_'.length)}${v.labels.kind === undefined ? '' : `:${String(v.labels.kind)}`}`] = v.value
    }
  }
  return out
}

for (const kind of STORES) {
  describe(`PetReads [${kind}]`, () => {
    it('caches a pet found by id, never an id not found: a pet created after a miss is found', async (t) => {
      const store = await open(t, kind)
      try {
        const metrics = new Metrics(store)
        const reads = new PetReads(store, 1 << 20, metrics)
        assert.equal(await reads.pet(1n, render), undefined)
        await store.createPet({ name: 'late', categoryId: 5n, status: 'pending' })
        const first = await reads.pet(1n, render)
        assert.deepEqual(JSON.parse(String(first?.body)), { id: 1, name: 'late', categoryId: 5, status: 'pending' })
        assert.equal(await reads.pet(1n, () => assert.fail('a hit renders nothing')), first)
        assert.deepEqual(await counts(metrics), { 'hits_total:pet': 1, 'misses_total:pet': 2, entries: 1, bytes: first!.bytes + ENTRY_OVERHEAD })
      } finally {
        await store.close()
      }
    })

    it('answers at once a hit on every store and a miss on a store that reads synchronously (SQLite), else a Promise; each lookup counted once', async (t) => {
      const store = await open(t, kind)
      try {
        const metrics = new Metrics(store)
        const reads = new PetReads(store, 1 << 20, metrics)
        for (let i = 0; i < 3; i++) await store.createPet({ name: `p${i}`, categoryId: BigInt(i), status: 'sold' })
        const synchronous = kind === 'sqlite'
        assert.equal(readsSynchronously(store), synchronous)
        const q = { afterId: null, limit: 2, status: undefined }
        const missing = reads.pet(9n, render)
        const pet = reads.pet(1n, render)
        const page = reads.page(q, render)
        assert.equal([missing, pet, page].every(r => r instanceof Promise), !synchronous)
        assert.equal(await missing, undefined, 'no such pet')
        assert.deepEqual(JSON.parse(String((await pet)?.body)), { id: 1, name: 'p0', categoryId: 0, status: 'sold' })
        assert.deepEqual(ids(await page), [1, 2])
        assert.deepEqual(await counts(metrics), { 'misses_total:pet': 2, 'misses_total:page': 1, entries: 2, bytes: (await pet)!.bytes + (await page).bytes + 'after 2'.length + 2 * ENTRY_OVERHEAD })
        const hit = reads.pet(1n, () => assert.fail('a hit renders nothing'))
        const pageHit = reads.page(q, () => assert.fail('a hit renders nothing'))
        assert.ok(hit !== undefined && !(hit instanceof Promise), 'a hit is answered at once')
        assert.ok(!(pageHit instanceof Promise), 'a page hit is answered at once')
        const c = await counts(metrics)
        assert.deepEqual([c['hits_total:pet'], c['misses_total:pet'], c['hits_total:page'], c['misses_total:page']], [1, 2, 1, 1])
      } finally {
        await store.close()
      }
    })

    it('caches only pages that came back full; the newest page grows as pets are added', async (t) => {
      const store = await open(t, kind)
      try {
        const metrics = new Metrics(store)
        const reads = new PetReads(store, 1 << 20, metrics)
        for (let i = 0; i < 3; i++) await store.createPet({ name: `p${i}`, categoryId: BigInt(i), status: i === 1 ? 'sold' : 'available' })
        const q = { afterId: null, limit: 2, status: undefined }
        const full = await reads.page(q, render)
        assert.deepEqual(ids(full), [1, 2])
        assert.equal(full.link, 'after 2')
        // A page of 2 with exactly 2 left: no next link yet, so not full, so not cached.
        const end = await reads.page({ afterId: 1n, limit: 2, status: undefined }, render)
        assert.deepEqual([ids(end), end.link], [[2, 3], undefined])
        const sold = await reads.page({ afterId: null, limit: 1, status: 'sold' }, render)
        assert.deepEqual([ids(sold), sold.link], [[2], undefined])

        await store.createPet({ name: 'p3', categoryId: 3n, status: 'sold' })
        assert.equal(await reads.page(q, () => assert.fail('a full page is a hit')), full)
        const grown = await reads.page({ afterId: 1n, limit: 2, status: undefined }, render)
        assert.deepEqual([ids(grown), grown.link], [[2, 3], 'after 3'])
        const soldNow = await reads.page({ afterId: null, limit: 1, status: 'sold' }, render)
        assert.deepEqual([ids(soldNow), soldNow.link], [[2], 'after 2'])
        // Keyed by filter, cursor and limit.
        assert.deepEqual(ids(await reads.page({ afterId: null, limit: 1, status: undefined }, render)), [1])
        assert.deepEqual(ids(await reads.page({ afterId: null, limit: 1, status: 'available' }, render)), [1])
        assert.deepEqual(ids(await reads.page({ afterId: 2n, limit: 1, status: 'sold' }, render)), [4])
        const c = await counts(metrics)
        assert.equal(c['hits_total:page'], 1)
        assert.equal(c['misses_total:page'], 8)
      } finally {
        await store.close()
      }
    })
  })
}

describe('PetReads memory bound', () => {
  it('keeps the accounted size within its bound, least recently used out first, and counts it', async (t) => {
    const store = await open(t, 'sqlite')
    try {
      for (let i = 0; i < 20; i++) await store.createPet({ name: 'x'.repeat(100), categoryId: BigInt(i), status: 'available' })
      const metrics = new Metrics(store)
      const entry = render({ id: 10n, name: 'x'.repeat(100), categoryId: 9n, status: 'available' }).bytes + ENTRY_OVERHEAD
      const reads = new PetReads(store, entry * 5, metrics)
      for (let id = 1n; id <= 20n; id++) await reads.pet(id, render)
      const c = await counts(metrics)
      assert.ok(c.bytes! <= entry * 5 && c.bytes! >= entry * 4, `accounted ${c.bytes} for a bound of ${entry * 5}`)
      assert.ok(c.entries! <= 5)
      // The most recent pets are hits, the oldest were evicted and are misses again.
      await reads.pet(20n, () => assert.fail('the newest entry is kept'))
      let rendered = false
      await reads.pet(1n, (pet) => { rendered = true; return render(pet) })
      assert.ok(rendered, 'the oldest entry was evicted')
    } finally {
      await store.close()
    }
  })

  it('accounts at least the heap its entries really take, getPet entries and pages alike', async (t) => {
    const store = await open(t, 'sqlite')
    try {
      const n = 20_000
      for (let i = 0; i < n; i += 1000) {
        await Promise.all(Array.from({ length: 1000 }, (_, j) => store.createPet({ name: (i + j) % 10 === 0 ? `Zoë 🐕 ${i + j}` : `pet-${i + j}`, categoryId: BigInt(i + j), status: 'available' })))
      }
      // Representations shaped as the routes make them: a JSON body, its SHA-1 ETag, (a page) a Link, and room for compressed forms.
      const real = (pets: Pet | Pet[], last?: Pet): Representation => {
        const r = render(pets, last)
        return { ...r, etag: etagOf(r.body), link: last === undefined ? undefined : `</v1/pets?limit=20&cursor=${'c'.repeat(43)}>; rel="next"`, gzip: undefined, br: undefined, key: undefined }
      }
      setFlagsFromString('--expose-gc')
      const gc = runInNewContext('gc') as () => void
      const metrics = new Metrics(store)
      const reads = new PetReads(store, 1 << 30, metrics)
      gc()
      const before = process.memoryUsage().heapUsed
      for (let id = 1n; id <= BigInt(n); id++) await reads.pet(id, real)
      for (let after = 0n; after < BigInt(n - 20); after += 20n) await reads.page({ afterId: after, limit: 20, status: undefined }, real)
      gc()
      const used = process.memoryUsage().heapUsed - before
      const c = await counts(metrics)
      assert.equal(c.entries, n + (n - 20) / 20)
      assert.ok(used <= c.bytes!, `the entries take ${used} bytes of heap, accounted ${c.bytes}`)
    } finally {
      await store.close()
    }
  })

  it('caches nothing with a bound of 0 (READ_CACHE_MAX_MB=0)', async (t) => {
    const store = await open(t, 'sqlite')
    try {
      await store.createPet({ name: 'a', categoryId: 1n, status: 'available' })
      await store.createPet({ name: 'b', categoryId: 1n, status: 'available' })
      const metrics = new Metrics(store)
      const reads = new PetReads(store, 0, metrics)
      let renders = 0
      const counting = (pets: Pet | Pet[], last?: Pet) => { renders++; return render(pets, last) }
      for (let i = 0; i < 3; i++) {
        await reads.pet(1n, counting)
        await reads.page({ afterId: null, limit: 1, status: undefined }, counting)
      }
      assert.equal(renders, 6)
      assert.deepEqual(await counts(metrics), { 'misses_total:pet': 3, 'misses_total:page': 3 })
      assert.equal(loadConfig({ READ_CACHE_MAX_MB: '0' }).readCacheMaxBytes, 0)
      assert.equal(loadConfig({}).readCacheMaxBytes, 64 * 1048576)
    } finally {
      await store.close()
    }
  })
})
