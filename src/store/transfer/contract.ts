import type { Counts, DataRecord } from './records.js'

/* Kept out of Store, as is TransferReader (reader.ts): the service never needs them, and each works on its own connection (one snapshot, one transaction). */

/** ONE transaction that keeps other writers out: any failure before commit() returns leaves the store as it was. */
export interface TransferWriter {
  readonly kind: 'sqlite' | 'postgres'
  begin (): Promise<Counts>
  /** May batch records; a collision or dangling reference fails naming the record's `line` in the import file (a copy has none). */
  write (record: DataRecord & { line?: number }, replaceSettings: boolean): Promise<void>
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
