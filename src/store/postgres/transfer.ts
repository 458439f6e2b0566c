import type pg from 'pg'
import Cursor from 'pg-cursor'
import { scopesText } from '../../schemas/scopes.js'
import type { TransferWriter } from '../transfer/contract.js'
import { type CountRow, countsSql, TransferReader, toCounts } from '../transfer/reader.js'
import {
  type ApiKeyRecordLine, type Counts, type DataRecord, type IdempotencyRecord, isoTime, type PetRecord, recordRefused, type SettingRecord
} from '../transfer/records.js'
import { createMigrationClient, guard, type PgConnectionOptions } from './connection.js'
import { INSERT_IDEMPOTENCY_KEYS, PET_INSERT_LOCK_KEY, PostgresStore } from './index.js'

/** Rows per round trip, both ways: big enough to amortize the trip, small enough to keep memory flat. */
const BATCH = 5000

/** A single connection without statement timeout (a whole-store read or write is long), migrated first. */
async function connect (opts: PgConnectionOptions): Promise<pg.Client> {
  await PostgresStore.migrate(opts)
  const client = createMigrationClient(opts)
  await guard(() => client.connect())
  return client
}

/** Text ordered COLLATE "C" (bytes), as SQLite orders it; created_at is a timestamptz. */
const dialect = { kind: 'postgres', byBytes: ' COLLATE "C"', param: '$1', time: (ms: number) => new Date(ms) } as const

/**
 * A REPEATABLE READ, READ ONLY transaction on its own connection: one snapshot for the counts and
 * every row, while the servers keep writing. Rows come through a cursor, BATCH at a time.
 */
export async function openPostgresReader (opts: PgConnectionOptions): Promise<TransferReader> {
  const client = await connect(opts)
  return new TransferReader({
    ...dialect,
    begin: async () => { await guard(() => client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY')) },
    // Each cursor is read to its end (an exhausted cursor is closed), or the reader failed and its
    // connection is ended: none needs a close of its own.
    async * rows<R> (text: string, values: unknown[] = []) {
      const cursor = client.query(new Cursor<R>(text, values))
      const read = async () => await guard(() => cursor.read(BATCH))
      for (let rows = await read(); rows.length > 0; rows = await read()) yield * rows
    },
    end: async () => { await guard(() => client.query('COMMIT')) },
    close: async () => { await client.end().catch(() => {}) }
  })
}

/** One multi-row INSERT per batch, by type; ids given explicitly (OVERRIDING the identity columns). */
const INSERTS = {
  apiKey: {
    text: `INSERT INTO api_keys (id, name, key_hash, scopes, created_at, expires_at, last_used_at, revoked_at) OVERRIDING SYSTEM VALUE
           SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[])`,
    values: (rs: ApiKeyRecordLine[]) => [
      rs.map(r => r.id), rs.map(r => r.name), rs.map(r => r.hash), rs.map(r => scopesText(r.scopes)),
      rs.map(r => isoTime(r.createdAt)), rs.map(r => isoTime(r.expiresAt)), rs.map(r => isoTime(r.lastUsedAt)), rs.map(r => isoTime(r.revokedAt))
    ]
  },
  pet: {
    text: `INSERT INTO pets (id, name, category_id, status) OVERRIDING SYSTEM VALUE
           SELECT * FROM unnest($1::int8[], $2::bytea[], $3::int8[], $4::text[])`,
    values: (rs: PetRecord[]) => [rs.map(r => r.id.toString()), rs.map(r => Buffer.from(r.name, 'utf8')), rs.map(r => r.categoryId.toString()), rs.map(r => r.status)]
  },
  idempotencyKey: {
    text: INSERT_IDEMPOTENCY_KEYS,
    values: (rs: IdempotencyRecord[]) => [rs.map(r => r.apiKeyId), rs.map(r => r.key), rs.map(r => r.fingerprint), rs.map(r => r.petId.toString()), rs.map(r => isoTime(r.createdAt))]
  }
}
type Batched = Exclude<DataRecord, SettingRecord> & { line?: number }

/**
 * One transaction on its own connection. The tables are locked SHARE ROW EXCLUSIVE (reads go on,
 * every other writer waits) from begin() to the end, so the emptiness checked at begin() still
 * holds at commit. Records are inserted in batches; when a batch is refused, it is rolled back to
 * its savepoint and replayed row by row to name the record at fault.
 */
export class PostgresTransferWriter implements TransferWriter {
  readonly kind = 'postgres' as const
  private batch: Batched[] = []

  private constructor (private readonly client: pg.Client) {}

  static async open (opts: PgConnectionOptions): Promise<PostgresTransferWriter> {
    return new PostgresTransferWriter(await connect(opts))
  }

  async begin (): Promise<Counts> {
    // Durable whatever the server's or the role's default (see txPrologue). The service's pet insert
    // lock too, so no create of a running server interleaves with the ids written here.
    await guard(() => this.client.query(`BEGIN; SET LOCAL synchronous_commit = on; SELECT pg_advisory_xact_lock(${PET_INSERT_LOCK_KEY});
      LOCK TABLE settings, api_keys, pets, idempotency_keys IN SHARE ROW EXCLUSIVE MODE`))
    return toCounts((await guard(() => this.client.query<CountRow>(countsSql(dialect.param), [new Date(0)]))).rows[0]!)
  }

  async write (r: DataRecord & { line?: number }, replaceSettings: boolean): Promise<void> {
    if (r.type === 'setting') {
      await this.flush()
      await guard(() => this.client.query(replaceSettings
        ? 'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value'
        : 'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [r.name, r.value]))
      return
    }
    if (this.batch.length > 0 && this.batch[0]!.type !== r.type) await this.flush()
    this.batch.push(r)
    if (this.batch.length >= BATCH) await this.flush()
  }

  private async insert (records: Batched[]): Promise<void> {
    const type = records[0]!.type
    const sql = INSERTS[type]
    await this.client.query(sql.text, (sql.values as (rs: Batched[]) => unknown[])(records))
  }

  private async flush (): Promise<void> {
    const batch = this.batch
    if (batch.length === 0) return
    this.batch = []
    await guard(() => this.client.query('SAVEPOINT batch'))
    try {
      await this.insert(batch)
    } catch (err) {
      if (!isConstraint(err)) throw err
      await guard(() => this.client.query('ROLLBACK TO SAVEPOINT batch'))
      for (const r of batch) {
        try {
          await this.insert([r])
        } catch (rowErr) {
          if (!isConstraint(rowErr)) throw rowErr
          throw recordRefused(r, (rowErr as { code: string }).code === '23503' ? 'reference' : 'unique')
        }
      }
      throw err // the batch failed, yet no row alone did: report the batch's own error
    }
    await guard(() => this.client.query('RELEASE SAVEPOINT batch'))
  }

  async commit (): Promise<void> {
    await this.flush()
    for (const table of ['pets', 'api_keys']) await guard(() => movePastHighestId(this.client, table))
    await guard(() => this.client.query('COMMIT'))
  }

  async rollback (): Promise<void> {
    await this.client.query('ROLLBACK').catch(() => {})
  }

  async close (): Promise<void> {
    await this.client.end().catch(() => {})
  }
}

const isConstraint = (err: unknown) => ['23505', '23503'].includes(String((err as { code?: unknown }).code))

/**
 * Explicit ids do not advance an identity sequence: move it so the next id drawn is past the
 * highest id in the table (never backwards, when the sequence is already further).
 */
async function movePastHighestId (client: pg.Client, table: string): Promise<void> {
  const { seq, max } = (await client.query<{ seq: string, max: bigint | null }>(`SELECT pg_get_serial_sequence($1, 'id') AS seq, max(id) AS max FROM ${table}`, [table])).rows[0]!
  // `seq` is the schema-qualified, already quoted name PostgreSQL itself returned. The next value
  // drawn is last_value + 1, or last_value itself before the first draw.
  if (max !== null) await client.query(`SELECT setval($1, $2::int8) FROM ${seq} WHERE $2::int8 > last_value OR (NOT is_called AND $2::int8 = last_value)`, [seq, max.toString()])
}
