import type { ApiKeyRecordLine, Counts, DataRecord, IdempotencyRecord, PetRecord, SettingRecord } from './records.js'

/* Kept out of Store: the service never needs them, and each works on its own connection (one snapshot, one transaction). */

/** One consistent snapshot, streamed section by section. */
export interface TransferReader {
  readonly kind: 'sqlite' | 'postgres'
  /** Idempotency records created before `liveSince` (epoch ms) are expired and left out. */
  begin (liveSince: number): Promise<Counts>
  settings (): AsyncIterable<SettingRecord>
  apiKeys (): AsyncIterable<ApiKeyRecordLine>
  pets (): AsyncIterable<PetRecord>
  idempotencyKeys (): AsyncIterable<IdempotencyRecord>
  end (): Promise<void>
  close (): Promise<void>
}

/** A line of the import file, or undefined (copy). */
export type RecordOrigin = number | undefined

/** ONE transaction that keeps other writers out: any failure before commit() returns leaves the store as it was. */
export interface TransferWriter {
  readonly kind: 'sqlite' | 'postgres'
  begin (): Promise<Counts>
  /** May batch records; a collision or dangling reference fails naming `origin`. */
  write (record: DataRecord, origin: RecordOrigin, replaceSettings: boolean): Promise<void>
  /** Also moves the id sequences past the highest ids. */
  commit (): Promise<void>
  rollback (): Promise<void>
  close (): Promise<void>
}

export interface Progress {
  start (total: number, unit: string): void
  update (done: number): void
  stop (): void
}
