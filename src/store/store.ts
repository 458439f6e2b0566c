import type { StoreGoneReason } from '../errors.js'
import type { NewPet, Pet, PetStatus } from '../schemas/pets.js'
import type { Scope } from '../schemas/scopes.js'

export interface ApiKeyGrant {
  id: number
  scopes: Scope[]
  /** null: never. */
  expiresAt: Date | null
  /** Past (revoked) or future (scheduled revocation); null: never revoked. */
  revokedAt: Date | null
}

export interface ApiKeyRecord extends ApiKeyGrant {
  name: string
  createdAt: Date
  lastUsedAt: Date | null
}

/** Stored by hash, never the secret; all scopes and no expiry when not given. */
export interface NewApiKey {
  name: string
  hash: string
  createdAt: Date
  scopes?: readonly Scope[]
  expiresAt?: Date | null
}

export interface ListPetsParams {
  /** Pets with a greater id; null for the first page. */
  afterId: bigint | null
  limit: number
  status: PetStatus | undefined
}

/** An Idempotency-Key record is kept at least until `expiredBefore` passes its createdAt; an expired one counts as absent. */
export interface IdempotencyKey {
  /** Keys are scoped per API key. */
  apiKeyId: number
  key: string
  /** SHA-256 (hex) of the normalized request. */
  fingerprint: string
  /** Stored as the record's createdAt. */
  now: Date
  expiredBefore: Date
}

/** replayed: same fingerprint, the pet it created; mismatch: another fingerprint. Neither writes. */
export type IdempotentCreateResult =
  | { outcome: 'created', pet: Pet }
  | { outcome: 'replayed', pet: Pet }
  | { outcome: 'mismatch' }

/** What a PostgreSQL store saw when auto mode stopped naming statements. */
export interface NamingStopped {
  /** 26000 (statement missing) or 42P05 (already exists). */
  code: string
  serverMessage: string
}

/** Pets are immutable: nothing here updates or deletes one. */
export interface PetRepository {
  /**
   * Resolves once the pet is durably committed. Ids become visible in increasing order on every
   * instance (a reader that sees id N sees every smaller id): the read cache rests on this.
   */
  createPet (pet: NewPet): Promise<Pet>
  /**
   * Under the lock that admits one idempotent insert at a time across instances: a live record
   * answers and writes nothing, else pet and record commit together (see creates.ts).
   */
  createPetIdempotent (pet: NewPet, idem: IdempotencyKey): Promise<IdempotentCreateResult>
  getPet (id: bigint): Promise<Pet | undefined>
  listPets (params: ListPetsParams): Promise<Pet[]>
  /**
   * Whether a full page that read up to `lastId` can never change: false while a committed batch
   * with ids in (afterId, lastId] is not yet visible (SQLite's group commit before its flush), so the
   * read cache does not keep it. Always true where ids become visible in id order as they commit.
   */
  pageIsFinal (afterId: bigint | null, lastId: bigint): boolean
}

export interface IdempotencyRepository {
  /** Returns how many records were deleted. */
  purgeIdempotencyKeys (before: Date): Promise<number>
}

export interface ApiKeyRepository {
  createApiKey (key: NewApiKey): Promise<ApiKeyRecord>
  /** Revoked, expired or not: the caller compares the times with its clock. */
  findApiKeyByHash (hash: string): Promise<ApiKeyGrant | undefined>
  listApiKeys (): Promise<ApiKeyRecord[]>
  /** False when no key has this id. A revocation only ever moves earlier. */
  revokeApiKey (id: number, at: Date): Promise<boolean>
  /** Written in the background, accurate to the flush interval. */
  touchApiKeys (usedAt: Map<number, Date>): Promise<void>
  countApiKeys (): Promise<number>
}

/** Values every instance shares (e.g. the cursor HMAC key). */
export interface SettingRepository {
  /** Created with `create()` by whichever instance comes first. */
  getOrCreateSetting (name: string, create: () => string): Promise<string>
}

export interface StoreLifecycle {
  readonly kind: 'sqlite' | 'postgres'
  /** On SQLite, also that it can take writes. */
  ping (): Promise<void>
  close (): Promise<void>
}

/**
 * Everything routes and services need from a database. Failures to reach or write it surface as
 * StoreUnavailableError. What only one database has is a capability below, found by its type guard.
 */
export interface Store extends PetRepository, IdempotencyRepository, ApiKeyRepository, SettingRepository, StoreLifecycle {}

export interface PooledStore {
  poolStats (): { total: number, idle: number, waiting: number }
}

export interface StatementNaming {
  namedStatements (): boolean
  /** Calls `fn` once auto mode stops naming statements (at once if it already has). */
  onNamingStopped (fn: (e: NamingStopped) => void): void
}

/** SQLite: starts the background thread (the server calls it once listening; a first task does too). */
export interface BackgroundWriter {
  startWriter (): void
}

/**
 * SQLite: `fn` gets the operator's line once the file is found removed, replaced, overwritten or
 * malformed (at once if it already is), and again when the rescue copy is written or failed.
 */
export interface GoneNotices {
  onGone (fn: (line: string, reason: StoreGoneReason, level: 'error' | 'info') => void): void
}

/**
 * SQLite, on a server start over an existing file: the store answers StoreOpeningError until
 * `opened` resolves (the file checked, then migrated); `opened` rejects with why it cannot be served,
 * or with StoreOpeningError when it was closed first.
 */
export interface Opening {
  readonly opened: Promise<void>
}

const has = (store: object, member: string): boolean => member in store && (store as Record<string, unknown>)[member] !== undefined

export const isPooled = <S extends object>(store: S): store is S & PooledStore => has(store, 'poolStats')
export const namesStatements = <S extends object>(store: S): store is S & StatementNaming => has(store, 'namedStatements') && has(store, 'onNamingStopped')
export const hasBackgroundWriter = <S extends object>(store: S): store is S & BackgroundWriter => has(store, 'startWriter')
export const noticesGone = <S extends object>(store: S): store is S & GoneNotices => has(store, 'onGone')
export const isOpening = <S extends object>(store: S): store is S & Opening => has(store, 'opened')
