/*
 * The read path of getPet and listPets, for every store: a cache of finished 200 representations
 * (JSON body, strong ETag, Link) above the Store interface, so a hit does no query, no
 * serialization and no hashing. A miss builds the representation once, for its answer and the cache.
 * On a store that reads synchronously (SQLite) every read, hit or miss, is answered at once; on
 * another (PostgreSQL) a miss is a Promise of the store's answer.
 *
 * Why a cached entry can never go stale, on any instance and either store:
 * 1. Pets are immutable. The Store interface has no update or delete, and nothing else writes the
 *    pets table. (If pets ever become mutable or deletable, this cache must go with it.)
 * 2. Ids only grow, and they become visible in id order, database-wide: a reader that sees id N sees
 *    every pet with a smaller id that will ever exist. SQLite: ids come from AUTOINCREMENT inside the
 *    one write transaction SQLite admits at a time (across processes too), so commits are in id order
 *    and an id is never reused. A batch committed but not yet flushed is hidden until its flush
 *    completes (store/sqlite/index.ts), and a page spanning its ids is not kept (settled). PostgreSQL: every pet insert draws its ids only under the pet insert
 *    advisory lock, which is released after its commit is visible (store/postgres/index.ts); the
 *    identity sequence hands out values one at a time (no per-session CACHE), and an id drawn by a
 *    rolled-back transaction stays a gap forever. test/store/id-order.test.ts fails if a store ever
 *    lets a reader see N+1 without N, with several instances creating at once.
 * So:
 * - A pet found by id never changes. An id not found is not cached: it may be created later.
 * - A page is read with limit + 1 rows. When the extra row comes back (the page is full and has a
 *   next link), every pet in the id range the page spans, up to that extra row, is already visible
 *   and immutable, and any pet created later, by any instance, gets a larger id: so the page's pets,
 *   with or without a status filter, and its Link (the cursor of its last pet, under the key every
 *   instance shares) are fixed forever. A page without the extra row (the newest end of the walk,
 *   for that filter) may still grow or gain a next link: it is never cached.
 * Nothing else is cached: authentication, revocation, rate limits, deprecation and conditional
 * requests (304) all run on every request.
 *
 * Memory is bounded by READ_CACHE_MAX_MB: each entry counts its body (a byte a character, two when
 * it is not pure ASCII), its Link, its compressed forms (gzip, br: made on the first request for
 * each, http/content-coding.ts) and ENTRY_OVERHEAD, and the least recently used entries go first
 * (lru-cache).
 */
import { LRUCache } from 'lru-cache'
import type { Codable, Coded } from '../http/content-coding.js'
import type { Metrics } from '../observability/metrics.js'
import type { Pet, PetStatus } from '../schemas/pets.js'
import { type ListPetsParams, petReadsNow, type Store } from '../store/store.js'

/**
 * A 200 representation as sent: the JSON body, its length in bytes (UTF-8), its strong ETag, and
 * (listPets) the Link to the next page. The body is kept as the string the serializer made: Node
 * writes a string body and the head in one piece, and a string lives in V8's heap, where an evicted
 * entry is freed whole (a small Buffer is a slice of a shared 8 KiB slab, held while any slice lives).
 * `gzip` and `br` are its compressed forms, each made on the first request that asks for it and
 * kept (buffers that own exactly their bytes); `key` is its cache key once kept.
 */
export interface Representation extends Codable {
  body: string
  bytes: number
  etag: string
  link: string | undefined
  gzip?: Coded | undefined
  br?: Coded | undefined
  key?: string | undefined
}

export interface PageQuery {
  /** Pets with id strictly greater than this; null for the first page. */
  afterId: bigint | null
  /** The client's page size (one more row is read to learn whether more follow). */
  limit: number
  status: PetStatus | undefined
}

/**
 * What an entry costs beyond its body and Link: the key and ETag strings, the body string's header,
 * the entry object, lru-cache's slots (about 335 bytes, measured on getPet entries and pages of 20
 * alike; test/services/pet-reads.test.ts checks that the accounted size bounds the real heap).
 */
export const ENTRY_OVERHEAD = 384

/** What a compressed form costs beyond its bytes: its Buffer and backing store objects, its tag string, its object. */
export const CODED_OVERHEAD = 256

const codedSize = (coded: Coded | undefined): number => coded === undefined ? 0 : coded.body.length + CODED_OVERHEAD

/**
 * An entry's accounted size. V8 keeps a string of Latin-1 characters at a byte each and any other at
 * two bytes a character, so a body that is not pure ASCII (its UTF-8 length differs from its length)
 * counts two bytes a character.
 */
const sizeOf = (rep: Representation): number =>
  (rep.bytes === rep.body.length ? rep.bytes : 2 * rep.body.length) + (rep.link?.length ?? 0) + ENTRY_OVERHEAD +
  codedSize(rep.gzip) + codedSize(rep.br)

/** Makes a listPets representation from the page's pets and, when more follow, the last of them. */
export type PageRender = (pets: Pet[], last: Pet | undefined) => Representation

const petKey = (id: bigint): string => `p${id}`
const pageKey = (q: PageQuery): string => `l${q.status ?? ''}:${q.afterId ?? ''}:${q.limit}`
/** What the store reads for a page: one row more than the limit, to learn whether more follow. */
const rowsOf = (q: PageQuery): ListPetsParams => ({ afterId: q.afterId, limit: q.limit + 1, status: q.status })

export class PetReads {
  private readonly cache: LRUCache<string, Representation> | undefined
  private readonly counters: Metrics['readCache']

  constructor (private readonly store: Store, maxBytes: number, metrics: Metrics) {
    this.cache = maxBytes > 0 ? new LRUCache<string, Representation>({ maxSize: maxBytes, sizeCalculation: sizeOf }) : undefined
    this.counters = metrics.readCache
    metrics.watchReadCache(() => ({ entries: this.cache?.size ?? 0, bytes: this.cache?.calculatedSize ?? 0 }))
  }

  /**
   * getPet: the cached representation (the hit counted), or the pet read from the store and made
   * into its representation by `render` and kept (the miss counted); undefined when no pet has this
   * id. At once for a hit and on a store that reads synchronously (SynchronousReads), else a Promise.
   */
  pet (id: bigint, render: (pet: Pet) => Representation): Representation | undefined | Promise<Representation | undefined> {
    const key = petKey(id)
    const hit = this.cache?.get(key)
    if (hit !== undefined) {
      this.counters.pet.hits.inc()
      return hit
    }
    this.counters.pet.misses.inc()
    const now = petReadsNow(this.store)
    if (now === undefined) return this.fetchPet(key, id, render)
    const pet = now.getPet(id)
    return pet === undefined ? undefined : this.keep(key, render(pet))
  }

  private async fetchPet (key: string, id: bigint, render: (pet: Pet) => Representation): Promise<Representation | undefined> {
    const pet = await this.store.getPet(id)
    return pet === undefined ? undefined : this.keep(key, render(pet))
  }

  /**
   * listPets: the cached page (the hit counted), or the page read from the store and made by `render`
   * (kept when full; the miss counted). `render` gets the page's pets and, when more follow, the last
   * of them (the next page starts after it). At once for a hit and on a store that reads
   * synchronously, else a Promise.
   */
  page (q: PageQuery, render: PageRender): Representation | Promise<Representation> {
    const hit = this.cache?.get(pageKey(q))
    if (hit !== undefined) {
      this.counters.page.hits.inc()
      return hit
    }
    this.counters.page.misses.inc()
    const now = petReadsNow(this.store)
    if (now === undefined) return this.fetchPage(q, render)
    return this.made(q, now.listPets(rowsOf(q)), render)
  }

  private async fetchPage (q: PageQuery, render: PageRender): Promise<Representation> {
    return this.made(q, await this.store.listPets(rowsOf(q)), render)
  }

  /** A page read with one row more than its limit, made into its representation, kept when full. */
  private made (q: PageQuery, pets: Pet[], render: PageRender): Representation {
    if (pets.length <= q.limit) return render(pets, undefined)
    // A full page is kept unless pets not yet shown have ids within it (a SQLite batch not yet flushed).
    const settled = petReadsNow(this.store)?.settled(q.afterId, pets[q.limit]!.id) ?? true
    pets.length = q.limit
    const rep = render(pets, pets[q.limit - 1])
    return settled ? this.keep(pageKey(q), rep) : rep
  }

  private keep (key: string, rep: Representation): Representation {
    if (this.cache === undefined) return rep
    rep.key = key
    this.cache.set(key, rep)
    return rep
  }

  /**
   * Told when a compressed form was added to `rep` (answerRead): a kept entry is accounted again
   * (lru-cache sizes an entry when it is set, so it is taken out and set again; the least recently
   * used others go when the bound is passed). A representation not (or no longer) kept is left alone.
   */
  readonly grew = (rep: Codable): void => {
    const { key } = rep as Representation
    if (key === undefined || this.cache?.peek(key) !== rep) return
    this.cache.delete(key)
    this.cache.set(key, rep as Representation)
  }
}
