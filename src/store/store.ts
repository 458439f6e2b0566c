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
 * An Idempotency-Key sent with a create (IETF httpapi Idempotency-Key draft, Stripe's semantics).
 * A record (apiKeyId, key) → (fingerprint, pet id, createdAt) is kept at least until `expiredBefore`
 * passes its createdAt; an expired record counts as absent and is replaced.
 */
export interface IdempotencyKey {
  /** Keys are scoped per API key: two API keys may use the same Idempotency-Key independently. */
  apiKeyId: number
  /** The header value, 1–255 printable ASCII characters. */
  key: string
  /** SHA-256 (hex) of the normalized request; equal fingerprints mean "the same request". */
  fingerprint: string
  /** When this request arrived (stored as the record's createdAt). */
  now: Date
  /** Records created before this instant are expired. */
  expiredBefore: Date
}

/**
 * created: the pet was inserted and the key recorded, in one transaction.
 * replayed: a live record for the key existed with the same fingerprint; `pet` is the pet it created; nothing written.
 * mismatch: a live record for the key existed with another fingerprint; nothing written.
 */
export type IdempotentCreateResult =
  | { outcome: 'created', pet: Pet }
  | { outcome: 'replayed', pet: Pet }
  | { outcome: 'mismatch' }

/** Connection-pool occupancy, for metrics (stores that have a pool). */
export interface PoolStats {
  total: number
  idle: number
  /** Callers waiting for a connection. */
  waiting: number
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
  /**
   * createPet with an Idempotency-Key: looks the key up and, when no live record exists, inserts the
   * pet and the record in the SAME transaction (so a crash keeps both or neither, and every instance
   * sees it). Concurrent calls with one key, on any instances, create at most one pet: a later one
   * sees the committed record (replayed/mismatch). Durable like createPet when it resolves.
   * SQLite: a lookup then two INSERTs in the writer's IMMEDIATE transaction (see sqlite/writes.ts).
   * A server database would claim the key first in the transaction, INSERT … ON CONFLICT (api_key_id, key)
   * DO NOTHING (a concurrent claim waits for the other transaction, then sees its row and reads it),
   * then insert the pet and record its id, all before COMMIT.
   */
  createPetIdempotent (pet: NewPet, idem: IdempotencyKey): Promise<IdempotentCreateResult>
  /** Deletes idempotency records created before `before` (housekeeping); returns how many. */
  purgeIdempotencyKeys (before: Date): Promise<number>
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

  /** Pool occupancy when the store has a connection pool (PostgreSQL); absent otherwise. */
  poolStats?(): PoolStats

  /** Resolves when the store answers a trivial query. */
  ping (): Promise<void>
  close (): Promise<void>
}
