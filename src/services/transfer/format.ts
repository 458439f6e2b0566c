import { createHash, type Hash } from 'node:crypto'
import { type Counts, type DataRecord, isoTime } from '../../store/transfer/records.js'

export type { Counts, DataRecord } from '../../store/transfer/records.js'
export { TransferLineError } from '../../store/transfer/records.js'

// The export format: docs/reference/export-format.md. Every line is written here with a fixed key
// order, so the same store contents give the same bytes, whichever store kind they were read from.
export const FORMAT = 'petstore-export'
export const FORMAT_VERSION = 2
export const READABLE_VERSIONS: readonly number[] = [1, 2]

/** Each record type, in the file's section order, and the name of its count. */
export const COUNT_OF = { setting: 'settings', apiKey: 'apiKeys', pet: 'pets', idempotencyKey: 'idempotencyKeys' } as const
export const COUNT_NAMES = Object.values(COUNT_OF)

export interface Header {
  format: typeof FORMAT
  version: number
  source: 'sqlite' | 'postgres'
  exportedAt: string
  counts: Counts
}

const str = (s: string) => JSON.stringify(s)
const time = (ms: number | null) => JSON.stringify(isoTime(ms))

export function headerLine (h: Header): string {
  const c = h.counts
  return `{"format":${str(h.format)},"version":${h.version},"source":${str(h.source)},"exportedAt":${str(h.exportedAt)},` +
    `"counts":{"settings":${c.settings},"apiKeys":${c.apiKeys},"pets":${c.pets},"idempotencyKeys":${c.idempotencyKeys}}}`
}

export function recordLine (r: DataRecord): string {
  switch (r.type) {
    case 'setting': return `{"type":"setting","name":${str(r.name)},"value":${str(r.value)}}`
    case 'apiKey': return `{"type":"apiKey","id":${r.id},"name":${str(r.name)},"hash":${str(r.hash)},"scopes":${JSON.stringify(r.scopes)},` +
      `"createdAt":${time(r.createdAt)},"expiresAt":${time(r.expiresAt)},"lastUsedAt":${time(r.lastUsedAt)},"revokedAt":${time(r.revokedAt)}}`
    case 'pet': return petLine(r)
    case 'idempotencyKey': return `{"type":"idempotencyKey","apiKeyId":${r.apiKeyId},"key":${str(r.key)},"fingerprint":${str(r.fingerprint)},"petId":${r.petId},"createdAt":${time(r.createdAt)}}`
  }
}

export function petLine (p: { id: bigint, name: string, categoryId: bigint, status: string }): string {
  return `{"type":"pet","id":${p.id},"name":${str(p.name)},"categoryId":${p.categoryId},"status":${str(p.status)}}`
}

export function endLine (e: { type: 'end', petsSha256: string }): string {
  return `{"type":"end","petsSha256":${str(e.petsSha256)}}`
}

// The end line's checksum: SHA-256 over each pet's line (petLine, plus "\n") in ascending id order.
export class PetDigest {
  private readonly hash: Hash = createHash('sha256')
  add (p: { id: bigint, name: string, categoryId: bigint, status: string }): void { this.hash.update(petLine(p) + '\n') }
  addLine (line: string): void { this.hash.update(line + '\n') }
  hex (): string { return this.hash.digest('hex') }
}
