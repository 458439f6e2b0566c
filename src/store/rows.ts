/*
 * Rows of both stores mapped once. SQLite gives dates as ISO strings or epoch ms; PostgreSQL gives
 * the pet name as bytea (text cannot hold U+0000) and timestamptz as Date; both give int64 as bigint.
 */
import { INT64_MIN } from '../schemas/int64.js'
import type { NewPet, Pet, PetStatus } from '../schemas/pets.js'
import { parseScopesText } from '../schemas/scopes.js'
import type { ApiKeyRecordLine } from './transfer/records.js'
import type { ApiKeyGrant, ApiKeyRecord, ListPetsParams } from './store.js'

export interface PetRow { id: bigint, name: string | Buffer, category_id: bigint, status: PetStatus }
export interface IdemRow extends PetRow { fingerprint: string, created_at: bigint | Date }
export interface KeyGrantRow { id: bigint, scopes: string, expires_at: string | Date | null, revoked_at: string | Date | null }
/** Every column of a key but its hash. */
export interface KeyRow extends KeyGrantRow { name: string, created_at: string | Date, last_used_at: string | Date | null }

export interface KeyExportRow extends KeyRow { key_hash: string }

export const KEY_GRANT_COLUMNS = 'id, scopes, expires_at, revoked_at'
export const KEY_COLUMNS = 'id, name, scopes, created_at, expires_at, last_used_at, revoked_at'
export const KEY_EXPORT_COLUMNS = `${KEY_COLUMNS}, key_hash`

export interface IdemRecord { fingerprint: string, createdAt: Date, pet: Pet }

const toDate = (v: string | Date | bigint): Date => (v instanceof Date ? v : new Date(typeof v === 'bigint' ? Number(v) : v))
const toDateOrNull = (v: string | Date | null): Date | null => (v === null ? null : toDate(v))

export const toPet = (r: PetRow): Pet => ({
  id: r.id,
  name: typeof r.name === 'string' ? r.name : r.name.toString('utf8'),
  categoryId: r.category_id,
  status: r.status
})

export const toIdemRecord = (r: IdemRow): IdemRecord => ({ fingerprint: r.fingerprint, createdAt: toDate(r.created_at), pet: toPet(r) })

export const toKeyGrant = (r: KeyGrantRow): ApiKeyGrant => ({
  id: Number(r.id),
  scopes: parseScopesText(r.scopes),
  expiresAt: toDateOrNull(r.expires_at),
  revokedAt: toDateOrNull(r.revoked_at)
})

export const toApiKey = (r: KeyRow): ApiKeyRecord => ({
  ...toKeyGrant(r),
  name: r.name,
  createdAt: toDate(r.created_at),
  lastUsedAt: toDateOrNull(r.last_used_at)
})

/** The request validator has applied the status default. */
export const storedPet = (id: bigint, pet: NewPet): Pet => ({ id, name: pet.name, categoryId: pet.categoryId, status: pet.status })

export const pageAfter = (params: ListPetsParams): bigint => params.afterId ?? INT64_MIN

const ms = (d: Date | null): number | null => d?.getTime() ?? null

/** A key as the export writes it: its record with the hash, times in epoch ms. */
export const toKeyRecordLine = (r: KeyExportRow): ApiKeyRecordLine => {
  const k = toApiKey(r)
  return { type: 'apiKey', ...k, hash: r.key_hash, createdAt: k.createdAt.getTime(), expiresAt: ms(k.expiresAt), lastUsedAt: ms(k.lastUsedAt), revokedAt: ms(k.revokedAt) }
}
