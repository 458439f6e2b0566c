import type { Pet } from '../schemas/pets.js'
import type { ListPetsParams, Store } from '../store/store.js'

export interface Page {
  pets: Pet[]
  /** The last pet of the page when more follow (the next page starts after it). */
  last: Pet | undefined
  /**
   * Whether the page can never change, so it may be kept (docs/explanation/read-cache.md): a full
   * page the store calls final. A partial page (the end of a walk) grows as pets are added.
   */
  final: boolean
}

/** A page of listPets, `limit` pets: one pet more than asked is read, to tell whether more follow. */
export async function readPage (store: Store, q: ListPetsParams): Promise<Page> {
  const pets = await store.listPets({ afterId: q.afterId, limit: q.limit + 1, status: q.status })
  if (pets.length <= q.limit) return { pets, last: undefined, final: false }
  const final = store.pageIsFinal(q.afterId, pets[q.limit]!.id)
  pets.length = q.limit
  return { pets, last: pets[q.limit - 1], final }
}
