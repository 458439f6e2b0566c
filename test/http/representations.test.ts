import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { loadConfig } from '../../src/config/index.js'
import { ENTRY_OVERHEAD, ReadCache, represent, type Representation } from '../../src/http/representations.js'
import { Metrics } from '../../src/observability/metrics.js'
import type { Pet } from '../../src/schemas/pets.js'

const json = (pets: Pet | Pet[]): string => JSON.stringify(pets, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v))
const pet = (id: number, name = `pet-${id}`): Pet => ({ id: BigInt(id), name, categoryId: BigInt(id), status: 'available' })
const metricsStore = { kind: 'sqlite' as const }

/** The read cache series of a registry, e.g. { 'hits_total:pet': 1, bytes: 600 } (those that are not 0). */
async function counts (metrics: Metrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    if (!m.name.startsWith('petstore_read_cache_')) continue
    for (const v of m.values) {
      if (v.value !== 0) out[`${m.name.slice('petstore_read_cache_'.length)}${v.labels.kind === undefined ? '' : `:${String(v.labels.kind)}`}`] = v.value
    }
  }
  return out
}

describe('represent', () => {
  it('gives a body its byte length and a strong ETag that changes with the bytes', () => {
    const a = represent('{"name":"Zoë"}')
    assert.equal(a.bytes, Buffer.byteLength('{"name":"Zoë"}'))
    assert.match(a.etag, /^"[A-Za-z0-9_-]+"$/)
    assert.equal(represent('{"name":"Zoë"}').etag, a.etag)
    assert.notEqual(represent('{"name":"Zoe"}').etag, a.etag)
  })
})

describe('ReadCache', () => {
  it('answers what it kept, counting each lookup as a hit or a miss of its kind, and its entries and accounted bytes', async () => {
    const metrics = new Metrics(metricsStore)
    const cache = new ReadCache(1 << 20, metrics)
    assert.equal(cache.get('pet', 'p1'), undefined)
    const rep = cache.keep('p1', represent(json(pet(1))))
    assert.equal(cache.get('pet', 'p1'), rep)
    const page = cache.keep('l::2', represent(json([pet(1), pet(2)]), 'after 2'))
    assert.equal(cache.get('page', 'l::2'), page)
    assert.deepEqual(await counts(metrics), {
      'hits_total:pet': 1, 'misses_total:pet': 1, 'hits_total:page': 1, entries: 2, bytes: rep.bytes + page.bytes + 'after 2'.length + 2 * ENTRY_OVERHEAD
    })
  })

  it('keeps the accounted size within its bound, least recently used out first', async () => {
    const metrics = new Metrics(metricsStore)
    const entry = represent(json(pet(10, 'x'.repeat(100)))).bytes + ENTRY_OVERHEAD
    const cache = new ReadCache(entry * 5, metrics)
    for (let id = 11; id <= 30; id++) cache.keep(`p${id}`, represent(json(pet(id, 'x'.repeat(100)))))
    const c = await counts(metrics)
    assert.ok(c.bytes! <= entry * 5 && c.bytes! >= entry * 4, `accounted ${c.bytes} for a bound of ${entry * 5}`)
    assert.ok(c.entries! <= 5)
    assert.ok(cache.get('pet', 'p30') !== undefined, 'the newest entry is kept')
    assert.equal(cache.get('pet', 'p11'), undefined, 'the oldest entry was evicted')
  })

  it('counts a compressed form against the bound once a request made it', async () => {
    const metrics = new Metrics(metricsStore)
    const cache = new ReadCache(1 << 20, metrics)
    const rep = cache.keep('l::100', represent(json(Array.from({ length: 100 }, (_, i) => pet(i + 1)))))
    const before = (await counts(metrics)).bytes!
    rep.gzip = { body: Buffer.alloc(500), etag: '"x-gzip"' }
    cache.grew(rep)
    assert.equal((await counts(metrics)).bytes, before + 500 + 256)
  })

  it('accounts at least the heap its entries really take, getPet entries and pages alike', async () => {
    const n = 20_000
    const pets = Array.from({ length: n }, (_, i) => pet(i + 1, (i + 1) % 10 === 0 ? `Zoë 🐕 ${i + 1}` : `pet-${i + 1}`))
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const metrics = new Metrics(metricsStore)
    const cache = new ReadCache(1 << 30, metrics)
    // Made as the routes make them: a JSON body, its ETag, (a page) a Link.
    const link = `</v1/pets?limit=20&cursor=${'c'.repeat(43)}>; rel="next"`
    const made: Array<() => Representation> = [
      ...pets.map(p => () => represent(json(p))),
      ...Array.from({ length: (n - 20) / 20 }, (_, i) => () => represent(json(pets.slice(i * 20, i * 20 + 20)), link))
    ]
    gc()
    const before = process.memoryUsage().heapUsed
    made.forEach((make, i) => cache.keep(`k${i}`, make()))
    gc()
    const used = process.memoryUsage().heapUsed - before
    const c = await counts(metrics)
    assert.equal(c.entries, made.length)
    assert.ok(used <= c.bytes!, `the entries take ${used} bytes of heap, accounted ${c.bytes}`)
  })

  it('keeps nothing with a bound of 0 (READ_CACHE_MAX_MB=0)', async () => {
    const metrics = new Metrics(metricsStore)
    const cache = new ReadCache(0, metrics)
    cache.keep('p1', represent(json(pet(1))))
    assert.equal(cache.get('pet', 'p1'), undefined)
    assert.deepEqual(await counts(metrics), { 'misses_total:pet': 1 })
    assert.equal(loadConfig({ READ_CACHE_MAX_MB: '0' }).readCacheMaxBytes, 0)
    assert.equal(loadConfig({}).readCacheMaxBytes, 64 * 1048576)
  })
})
