import type { StoreGoneReason } from '../errors.js'
import type { NewPet, Pet, PetStatus } from '../schemas/pets.js'
import type { Scope } from '../schemas/scopes.js'

/** What verifying a key needs from the store: which key, what it may do, and until when. */
export interface ApiKeyGrant {
  id: number
  scopes: Scope[]
  /** When the key stops working by itself; null: never. */
  expiresAt: Date | null
  /** From when the key is refused: past (revoked) or future (a scheduled revocation); null: never revoked. */
  revokedAt: Date | null
}

export interface ApiKeyRecord extends ApiKeyGrant {
  name: string
  createdAt: Date
  lastUsedAt: Date | null
}

/** A key to store: its hash (never the secret), and what it may do (all scopes, no expiry when not given). */
export interface NewApiKey {
  name: string
  hash: string
  createdAt: Date
  scopes?: readonly Scope[]
  expiresAt?: Date | null
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

/** What a PostgreSQL store saw when it stopped naming statements (PG_PREPARED_STATEMENTS=auto). */
export interface NamingStopped {
  /** The SQLSTATE the server answered: 26000 (statement missing) or 42P05 (already exists). */
  code: string
  /** The server's message, e.g. `prepared statement "get_pet_…" does not exist`. */
  serverMessage: string
}

/** Connection-pool occupancy, for metrics (stores that have a pool). */
export interface PoolStats {
  total: number
  idle: number
  /** Callers waiting for a connection. */
  waiting: number
}

/** getPet and listPets of a store that reads synchronously (SynchronousReads.readsNow). */
export interface PetReadsNow {
  getPet (id: bigint): Pet | undefined
  listPets (params: ListPetsParams): Pet[]
  /**
   * Whether every pet with an id in (afterId, lastId] that will ever be shown is shown now: false
   * while a batch with ids in that range is committed but not yet flushed (its pets hidden), so that
   * a page spanning it is not kept.
   */
  settled (afterId: bigint | null, lastId: bigint): boolean
}

/**
 * The pets: created (group-committed, optionally under an Idempotency-Key), read by id and by page.
 * Pets are immutable: nothing here updates or deletes one.
 */
export interface PetRepository {
  /**
   * Durably stores a pet; resolves only once the pet is committed (group-committed with its peers).
   * Ids are assigned in increasing order and become visible in that order on every instance: a
   * reader that sees id N sees every pet with a smaller id (SQLite: the one writer at a time;
   * PostgreSQL: the pet insert lock, held until the commit is visible). The read cache
   * (services/pet-reads.ts) rests on this; test/store/id-order.test.ts checks it.
   */
  createPet (pet: NewPet): Promise<Pet>
  /**
   * createPet with an Idempotency-Key (creates.ts has the decision, once for both stores): inside
   * the transaction that inserts pets, and under the lock that admits one such transaction at a
   * time across all instances (SQLite: BEGIN IMMEDIATE; PostgreSQL: the pet insert advisory lock),
   * the key's record is looked up; a live record answers (replayed or mismatch) and writes nothing;
   * otherwise the pet and the record are inserted together (a crash keeps both or neither). So
   * concurrent calls with one key, on any instances, create at most one pet. Durable like createPet
   * when it resolves.
   */
  createPetIdempotent (pet: NewPet, idem: IdempotencyKey): Promise<IdempotentCreateResult>
  getPet (id: bigint): Promise<Pet | undefined>
  /** Pets in ascending id order (keyset pagination). */
  listPets (params: ListPetsParams): Promise<Pet[]>
}

/** The Idempotency-Key records' housekeeping (they are written by PetRepository.createPetIdempotent). */
export interface IdempotencyRepository {
  /** Deletes idempotency records created before `before` (housekeeping); returns how many. */
  purgeIdempotencyKeys (before: Date): Promise<number>
}

/** The API keys, by hash (never the secret). */
export interface ApiKeyRepository {
  createApiKey (key: NewApiKey): Promise<ApiKeyRecord>
  /** The key with this SHA-256 hash (hex), revoked, expired or not: the caller compares the times with its clock. */
  findApiKeyByHash (hash: string): Promise<ApiKeyGrant | undefined>
  listApiKeys (): Promise<ApiKeyRecord[]>
  /**
   * Revokes the key from `at` on (now, or later: a scheduled revocation); false when no key has this
   * id. A revocation only ever moves earlier: an earlier time already set is kept.
   */
  revokeApiKey (id: number, at: Date): Promise<boolean>
  /** Records when keys were last used (written in the background, accurate to the flush interval). */
  touchApiKeys (usedAt: Map<number, Date>): Promise<void>
  countApiKeys (): Promise<number>
}

/** Values kept in the store for every instance to share (e.g. the cursor HMAC key). */
export interface SettingRepository {
  /** The value of setting `name`, created with `create()` on first use (by whichever instance comes first). */
  getOrCreateSetting (name: string, create: () => string): Promise<string>
}

/** Which database, whether it answers, and its end. */
export interface StoreLifecycle {
  readonly kind: 'sqlite' | 'postgres'
  /** Resolves when the store answers a trivial query (and, on SQLite, can take writes). */
  ping (): Promise<void>
  close (): Promise<void>
}

/**
 * Everything the service needs from a database, composed of one repository per thing it holds.
 * Routes and services see only this; each store (SQLite, PostgreSQL) holds only its SQL and its
 * connection handling behind it, and shares the rest (rows.ts: row types and mappers; creates.ts:
 * group commit and the idempotent create; repositories.ts: the API keys and settings over a
 * per-database adapter). Any failure to reach or write the database surfaces as
 * StoreUnavailableError. What only one database has is a capability of its own below, found with
 * its type guard.
 */
export interface Store extends PetRepository, IdempotencyRepository, ApiKeyRepository, SettingRepository, StoreLifecycle {}

/**
 * SQLite: getPet and listPets answered synchronously, on a store whose reads run on the event loop
 * anyway (a primary-key read is a few microseconds of CPU). The read cache answers a miss with them
 * at once (services/pet-reads.ts).
 */
export interface SynchronousReads {
  readonly readsNow: PetReadsNow
}

/** PostgreSQL: connection-pool occupancy, for metrics. */
export interface PooledStore {
  poolStats (): PoolStats
}

/** PostgreSQL: whether hot statements are sent named (server-side prepared), and when that stops. */
export interface StatementNaming {
  /** Whether hot statements are sent named now. */
  namedStatements (): boolean
  /**
   * Calls `fn` once PG_PREPARED_STATEMENTS=auto stops naming statements because the server showed
   * a transaction-mode pooler in between (at once if it already has).
   */
  onNamingStopped (fn: (e: NamingStopped) => void): void
}

/**
 * SQLite: the background thread (checkpoints, last-used times, the purge), started if it is not
 * running yet. The server calls it once it listens; its first task starts it too, whoever opened
 * the store.
 */
export interface BackgroundWriter {
  startWriter (): void
}

/**
 * SQLite: calls `fn` once with the operator's line (level error) when the store's database file is
 * found removed, replaced, overwritten or malformed under the running store (at once if it already
 * is); from then on it acknowledges no create (src/store/sqlite/store-file.ts). Removed or replaced,
 * the store then writes a copy of itself beside the path, and `fn` is told again when it is written
 * (info) or failed (error).
 */
export interface GoneNotices {
  onGone (fn: (line: string, reason: StoreGoneReason, level: 'error' | 'info') => void): void
}

const has = (store: object, member: string): boolean => member in store && (store as Record<string, unknown>)[member] !== undefined

export const readsSynchronously = <S extends object>(store: S): store is S & SynchronousReads => has(store, 'readsNow')
export const isPooled = <S extends object>(store: S): store is S & PooledStore => has(store, 'poolStats')
export const namesStatements = <S extends object>(store: S): store is S & StatementNaming => has(store, 'namedStatements') && has(store, 'onNamingStopped')
export const hasBackgroundWriter = <S extends object>(store: S): store is S & BackgroundWriter => has(store, 'startWriter')
/** The store's synchronous reads, when it has them. */
export const petReadsNow = (store: object): PetReadsNow | undefined => readsSynchronously(store) ? store.readsNow : undefined
export const noticesGone = <S extends object>(store: S): store is S & GoneNotices => has(store, 'onGone')
