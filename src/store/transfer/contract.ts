import type { ApiKeyRecordLine, Counts, DataRecord, IdempotencyRecord, PetRecord, SettingRecord } from './records.js'

/*
 * Whole-store reads and writes for export, import and copy. Kept beside the Store interface rather
 * than in it: the service never needs them, and each works on its own connection (one snapshot to
 * read, one transaction to write), not through the service's pool or group commit.
 */

/** Reads one consistent snapshot of a store, section by section, streaming (constant memory). */
export interface TransferReader {
  readonly kind: 'sqlite' | 'postgres'
  /**
   * Starts the snapshot; returns what it holds. Idempotency records created before `liveSince`
   * (ms since the epoch) are expired and left out.
   */
  begin (liveSince: number): Promise<Counts>
  settings (): AsyncIterable<SettingRecord>
  apiKeys (): AsyncIterable<ApiKeyRecordLine>
  /** Every pet, ascending id. */
  pets (): AsyncIterable<PetRecord>
  idempotencyKeys (): AsyncIterable<IdempotencyRecord>
  /** Ends the snapshot (nothing was written). */
  end (): Promise<void>
  close (): Promise<void>
}

/** Where a failed record came from, for the message: a line of the import file, or nothing (copy). */
export type RecordOrigin = number | undefined

/**
 * Writes records into a store in ONE transaction that also keeps other writers out, so an import
 * is all or nothing: any failure before commit() returns leaves the store as it was.
 */
export interface TransferWriter {
  readonly kind: 'sqlite' | 'postgres'
  /** Opens the transaction and takes the store's write lock; returns what the store already holds. */
  begin (): Promise<Counts>
  /**
   * Adds a record (possibly batched until the next write of another type, or commit). Settings
   * replace existing ones when `replaceSettings`, else an existing setting is kept. A collision or
   * a dangling reference fails naming `origin`.
   */
  write (record: DataRecord, origin: RecordOrigin, replaceSettings: boolean): Promise<void>
  /** Writes what is batched, moves the id sequences past the highest ids, commits. */
  commit (): Promise<void>
  rollback (): Promise<void>
  close (): Promise<void>
}

/** Told how many records there are, then how many are done; the CLI draws it on a TTY. */
export interface Progress {
  start (total: number, unit: string): void
  update (done: number): void
  stop (): void
}
