import type { PetStatus } from '../../schemas/pets.js'
import type { Scope } from '../../schemas/scopes.js'

/* One record per row, in the types the export format writes (services/transfer/format.ts). */

export interface Counts { settings: number, apiKeys: number, pets: number, idempotencyKeys: number }

export interface SettingRecord { type: 'setting', name: string, value: string }
/** The hash, never the secret (the store never has it). */
export interface ApiKeyRecordLine {
  type: 'apiKey'
  id: number
  name: string
  hash: string
  scopes: Scope[]
  /** Epoch ms, as every time here. */
  createdAt: number
  expiresAt: number | null
  lastUsedAt: number | null
  revokedAt: number | null
}
export interface PetRecord { type: 'pet', id: bigint, name: string, categoryId: bigint, status: PetStatus }
export interface IdempotencyRecord {
  type: 'idempotencyKey'
  apiKeyId: number
  key: string
  fingerprint: string
  petId: bigint
  createdAt: number
}

export type DataRecord = SettingRecord | ApiKeyRecordLine | PetRecord | IdempotencyRecord

/** A time as the file and the stores' text columns hold it (toISOString). */
export const isoTime = (ms: number | null) => ms === null ? null : new Date(ms).toISOString()

export class TransferLineError extends Error {
  constructor (readonly line: number, problem: string) {
    super(`line ${line}: ${problem}`)
    this.name = 'TransferLineError'
  }
}

/** `reference`: an Idempotency-Key names a key or pet in neither the file nor the store. */
export function recordRefused (r: DataRecord & { line?: number }, kind: 'unique' | 'reference'): Error {
  const what = r.type === 'pet'
    ? `pet id ${r.id} is already in the target store`
    : r.type === 'apiKey'
      ? `API key id ${r.id} (or a key with the same hash) is already in the target store`
      : r.type === 'idempotencyKey'
        ? kind === 'unique'
          ? `Idempotency-Key ${JSON.stringify(r.key)} of API key ${r.apiKeyId} is already in the target store`
          : `Idempotency-Key ${JSON.stringify(r.key)} refers to API key ${r.apiKeyId} or pet ${r.petId}, which is neither in the file nor in the target store`
        : `setting ${JSON.stringify(r.name)} could not be written`
  return r.line === undefined ? new Error(what) : new TransferLineError(r.line, what)
}
