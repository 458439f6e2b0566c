import type { NewPet, Pet, PetStatus } from '../schemas/pets.js'

export interface ApiKeyRecord {
  id: number
  name: string
  createdAt: Date
  lastUsedAt: Date | null
  revokedAt: Date | null
}

export interface ListPetsParams {
  /** Return pets with id strictly greater than this; null for the first page. */
  afterId: bigint | null
  limit: number
  status: PetStatus | undefined
}

/**
 * Everything the service needs from a database. Routes and services see only this interface; each
 * store (SQLite, PostgreSQL) holds all its SQL behind it. Any failure to reach or write the database
 * surfaces as StoreUnavailableError.
 */
export interface Store {
  readonly kind: 'sqlite' | 'postgres'

  /** Durably stores a pet; resolves only once the pet is committed (group-committed with its peers). */
  createPet (pet: NewPet): Promise<Pet>
  getPet (id: bigint): Promise<Pet | undefined>
  /** Pets in ascending id order (keyset pagination). */
  listPets (params: ListPetsParams): Promise<Pet[]>

  createApiKey (key: { name: string, hash: string, createdAt: Date }): Promise<ApiKeyRecord>
  /** The key with this SHA-256 hash (hex), revoked or not. */
  findApiKeyByHash (hash: string): Promise<{ id: number, revoked: boolean } | undefined>
  listApiKeys (): Promise<ApiKeyRecord[]>
  /** Marks the key revoked; false when no key has this id. Revoking twice keeps the first time. */
  revokeApiKey (id: number, at: Date): Promise<boolean>
  /** Records when keys were last used (written in the background, accurate to the flush interval). */
  touchApiKeys (usedAt: Map<number, Date>): Promise<void>
  countApiKeys (): Promise<number>

  /** A value kept in the store for every instance to share, created with `create()` on first use. */
  getOrCreateSetting (name: string, create: () => string): Promise<string>

  /** Resolves when the store answers a trivial query. */
  ping (): Promise<void>
  close (): Promise<void>
}
