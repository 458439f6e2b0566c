/*
 * getPet and listPets answers for every store, kept finished (body, strong ETag, Link, codings) above
 * the Store interface in an LRU bounded by READ_CACHE_MAX_MB. Safe only because pets are immutable and
 * ids become visible in id order (docs/explanation/read-cache.md, test/store/id-order.test.ts): a found
 * pet and a full page never change, while misses and partial pages are never kept. If pets ever become
 * mutable or deletable, this cache must go.
 */
import { LRUCache } from 'lru-cache'
import type { Codable, Coded } from '../http/content-coding.js'
import type { Metrics } from '../observability/metrics.js'
import type { Pet, PetStatus } from '../schemas/pets.js'
import { type ListPetsParams, petReadsNow, type Store } from '../store/store.js'

/** The body stays a string: a small Buffer would keep a shared slab alive after eviction. */
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
  afterId: bigint | null
  limit: number
  status: PetStatus | undefined
}

/** An entry's heap cost beyond its body and Link (test/services/pet-reads.test.ts checks it bounds the real heap). */
export const ENTRY_OVERHEAD = 384

export const CODED_OVERHEAD = 256

const codedSize = (coded: Coded | undefined): number => coded === undefined ? 0 : coded.body.length + CODED_OVERHEAD

// V8 keeps a string that is not Latin-1 at two bytes a character.
const sizeOf = (rep: Representation): number =>
  (rep.bytes === rep.body.length ? rep.bytes : 2 * rep.body.length) + (rep.link?.length ?? 0) + ENTRY_OVERHEAD +
  codedSize(rep.gzip) + codedSize(rep.br)

export type PageRender = (pets: Pet[], last: Pet | undefined) => Representation

const petKey = (id: bigint): string => `p${id}`
const pageKey = (q: PageQuery): string => `l${q.status ?? ''}:${q.afterId ?? ''}:${q.limit}`
const rowsOf = (q: PageQuery): ListPetsParams => ({ afterId: q.afterId, limit: q.limit + 1, status: q.status })

export class PetReads {
  private readonly cache: LRUCache<string, Representation> | undefined
  private readonly counters: Metrics['readCache']

  constructor (private readonly store: Store, maxBytes: number, metrics: Metrics) {
    this.cache = maxBytes > 0 ? new LRUCache<string, Representation>({ maxSize: maxBytes, sizeCalculation: sizeOf }) : undefined
    this.counters = metrics.readCache
    metrics.watchReadCache(() => ({ entries: this.cache?.size ?? 0, bytes: this.cache?.calculatedSize ?? 0 }))
  }

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

  private made (q: PageQuery, pets: Pet[], render: PageRender): Representation {
    if (pets.length <= q.limit) return render(pets, undefined)
    // Not kept while a SQLite batch not yet flushed has ids within the page.
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

  // lru-cache sizes an entry when it is set: one that gained a coding is set again.
  readonly grew = (rep: Codable): void => {
    const { key } = rep as Representation
    if (key === undefined || this.cache?.peek(key) !== rep) return
    this.cache.delete(key)
    this.cache.set(key, rep as Representation)
  }
}
