import { KEY_EXPORT_COLUMNS, type KeyExportRow, type PetRow, toKeyRecordLine, toPet } from '../rows.js'
import type { Counts, DataRecord, PetRecord } from './records.js'

/** A read transaction on one connection, as one store kind runs it, and the SQL in which the kinds differ. */
export interface Snapshot {
  readonly kind: 'sqlite' | 'postgres'
  /** Orders text by bytes, as SQLite does by default (PostgreSQL: COLLATE "C"), so both stores export the same lines. */
  readonly byBytes: string
  /** The placeholder of a statement's one parameter. */
  readonly param: string
  /** An epoch-ms time as idempotency_keys.created_at compares with it. */
  time (ms: number): unknown
  begin (): Promise<void>
  /** Streams the rows of one statement, so memory stays flat. */
  rows<R> (sql: string, params?: unknown[]): AsyncIterable<R>
  end (): Promise<void>
  close (): Promise<void>
}

export type CountRow = Record<keyof Counts, bigint | number>

/** One statement for the four counts; the Idempotency-Keys from the time bound to `param` on. */
export const countsSql = (param: string) => `SELECT (SELECT count(*) FROM settings) AS settings,
  (SELECT count(*) FROM api_keys) AS "apiKeys", (SELECT count(*) FROM pets) AS pets,
  (SELECT count(*) FROM idempotency_keys WHERE created_at >= ${param}) AS "idempotencyKeys"`

export const toCounts = (r: CountRow): Counts =>
  ({ settings: Number(r.settings), apiKeys: Number(r.apiKeys), pets: Number(r.pets), idempotencyKeys: Number(r.idempotencyKeys) })

interface IdemRow { api_key_id: bigint, key: string, fingerprint: string, pet_id: bigint, created_at: bigint | Date }

/** One consistent snapshot, streamed in the export file's order, read with the same statements from either store. */
export class TransferReader {
  private liveSince: unknown

  constructor (private readonly db: Snapshot) {}

  get kind (): Snapshot['kind'] { return this.db.kind }

  /** Idempotency records created before `liveSince` (epoch ms) are expired and left out. */
  async begin (liveSince: number): Promise<Counts> {
    this.liveSince = this.db.time(liveSince)
    await this.db.begin()
    let counts: Counts | undefined
    for await (const r of this.db.rows<CountRow>(countsSql(this.db.param), [this.liveSince])) counts = toCounts(r)
    return counts!
  }

  /** Every record, section by section: settings, API keys, pets, Idempotency-Keys. */
  async * records (): AsyncIterable<DataRecord> {
    for await (const r of this.db.rows<{ name: string, value: string }>(`SELECT name, value FROM settings ORDER BY name${this.db.byBytes}`)) {
      yield { type: 'setting', name: r.name, value: r.value }
    }
    for await (const r of this.db.rows<KeyExportRow>(`SELECT ${KEY_EXPORT_COLUMNS} FROM api_keys ORDER BY id`)) yield toKeyRecordLine(r)
    yield * this.pets()
    const rows = this.db.rows<IdemRow>(`SELECT api_key_id, key, fingerprint, pet_id, created_at FROM idempotency_keys
      WHERE created_at >= ${this.db.param} ORDER BY api_key_id, key${this.db.byBytes}`, [this.liveSince])
    for await (const r of rows) {
      // Number() of a Date is its epoch ms.
      yield { type: 'idempotencyKey', apiKeyId: Number(r.api_key_id), key: r.key, fingerprint: r.fingerprint, petId: r.pet_id, createdAt: Number(r.created_at) }
    }
  }

  async * pets (): AsyncIterable<PetRecord> {
    for await (const r of this.db.rows<PetRow>('SELECT id, name, category_id, status FROM pets ORDER BY id')) yield { type: 'pet', ...toPet(r) }
  }

  async end (): Promise<void> { await this.db.end() }

  async close (): Promise<void> { await this.db.close() }
}
