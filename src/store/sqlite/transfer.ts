import { existsSync, rmSync } from 'node:fs'
import type Database from 'better-sqlite3'
import type { PetStatus } from '../../schemas/pets.js'
import { scopesText } from '../../schemas/scopes.js'
import { KEY_EXPORT_COLUMNS, type KeyExportRow, toKeyRecordLine } from '../rows.js'
import type { RecordOrigin, TransferReader, TransferWriter } from '../transfer/contract.js'
import {
  type ApiKeyRecordLine, type Counts, type DataRecord, type IdempotencyRecord, type PetRecord, recordRefused, type SettingRecord
} from '../transfer/records.js'
import { openSqlite, type SynchronousLevel } from './connection.js'
import { migrateSqlite } from './migrations.js'
import { refuseForeignStore, refuseNewWhereDataWas, StoreMissingError } from './start-checks.js'
import { isNew } from './store-file.js'

const toIso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString()

/**
 * A reader never makes a database (`mustExist`); a writer may make a new one (import or copy into a
 * new file), but not where a store's marker or WAL says one was lost, as a server start would not.
 * Neither uses a database that is not the store its marker names.
 */
function open (path: string, synchronous: SynchronousLevel, mustExist: boolean): Database.Database {
  if (path !== ':memory:' && isNew(path)) {
    if (mustExist) throw new StoreMissingError(`no SQLite database at ${path} (no file, or an empty one)`)
    refuseNewWhereDataWas(path, true)
  } else if (path !== ':memory:') {
    refuseForeignStore(path, 'command')
  }
  const db = openSqlite(path, synchronous, { mustExist })
  try {
    migrateSqlite(db)
  } catch (err) {
    db.close()
    throw err
  }
  return db
}

function counts (db: Database.Database, liveSince: number): Counts {
  const n = (sql: string, ...args: unknown[]) => Number((db.prepare(sql).get(...args) as { n: bigint }).n)
  return {
    settings: n('SELECT count(*) AS n FROM settings'),
    apiKeys: n('SELECT count(*) AS n FROM api_keys'),
    pets: n('SELECT count(*) AS n FROM pets'),
    idempotencyKeys: n('SELECT count(*) AS n FROM idempotency_keys WHERE created_at >= ?', liveSince)
  }
}

interface PetRow { id: bigint, name: string, category_id: bigint, status: PetStatus }
interface IdemRow { api_key_id: bigint, key: string, fingerprint: string, pet_id: bigint, created_at: bigint }

/**
 * A read transaction on its own connection: in WAL mode it sees one snapshot from its first read
 * to its end, while the server keeps writing. Rows are streamed with iterate(), so memory stays flat.
 */
export class SqliteTransferReader implements TransferReader {
  readonly kind = 'sqlite' as const
  private liveSince = 0

  private constructor (private readonly db: Database.Database) {}

  static open (path: string, synchronous: SynchronousLevel): SqliteTransferReader {
    return new SqliteTransferReader(open(path, synchronous, true))
  }

  async begin (liveSince: number): Promise<Counts> {
    this.liveSince = liveSince
    this.db.exec('BEGIN') // deferred: the snapshot starts with the first read, the counts
    return counts(this.db, liveSince)
  }

  async * settings (): AsyncIterable<SettingRecord> {
    for (const r of this.db.prepare('SELECT name, value FROM settings ORDER BY name').iterate() as IterableIterator<{ name: string, value: string }>) {
      yield { type: 'setting', name: r.name, value: r.value }
    }
  }

  async * apiKeys (): AsyncIterable<ApiKeyRecordLine> {
    const rows = this.db.prepare(`SELECT ${KEY_EXPORT_COLUMNS} FROM api_keys ORDER BY id`).iterate() as IterableIterator<KeyExportRow>
    for (const r of rows) yield toKeyRecordLine(r)
  }

  async * pets (): AsyncIterable<PetRecord> {
    for (const r of this.db.prepare('SELECT id, name, category_id, status FROM pets ORDER BY id').iterate() as IterableIterator<PetRow>) {
      yield { type: 'pet', id: r.id, name: r.name, categoryId: r.category_id, status: r.status }
    }
  }

  async * idempotencyKeys (): AsyncIterable<IdempotencyRecord> {
    const rows = this.db.prepare(`SELECT api_key_id, key, fingerprint, pet_id, created_at FROM idempotency_keys
      WHERE created_at >= ? ORDER BY api_key_id, key`).iterate(this.liveSince) as IterableIterator<IdemRow>
    for (const r of rows) {
      yield { type: 'idempotencyKey', apiKeyId: Number(r.api_key_id), key: r.key, fingerprint: r.fingerprint, petId: r.pet_id, createdAt: Number(r.created_at) }
    }
  }

  async end (): Promise<void> {
    if (this.db.inTransaction) this.db.exec('COMMIT')
  }

  async close (): Promise<void> {
    if (this.db.open) this.db.close()
  }
}

const isConstraint = (err: unknown, kind: 'unique' | 'reference') => {
  const code = (err as { code?: unknown }).code
  return kind === 'reference'
    ? code === 'SQLITE_CONSTRAINT_FOREIGNKEY'
    : code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE'
}

/**
 * One IMMEDIATE transaction on its own connection: it holds SQLite's write lock from begin() to
 * commit() or rollback(), so no server writes in between, and nothing is visible until commit.
 * AUTOINCREMENT moves sqlite_sequence past every id inserted, so new pets never reuse one.
 */
export class SqliteTransferWriter implements TransferWriter {
  readonly kind = 'sqlite' as const
  private readonly stmts

  /** `made`: the path of the database this writer made, removed again unless a load commits into it. */
  private constructor (private readonly db: Database.Database, private made: string | undefined) {
    this.stmts = {
      replaceSetting: db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value'),
      keepSetting: db.prepare('INSERT OR IGNORE INTO settings (name, value) VALUES (?, ?)'),
      key: db.prepare('INSERT INTO api_keys (id, name, key_hash, scopes, created_at, expires_at, last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
      pet: db.prepare('INSERT INTO pets (id, name, category_id, status) VALUES (?, ?, ?, ?)'),
      idem: db.prepare('INSERT INTO idempotency_keys (api_key_id, key, fingerprint, pet_id, created_at) VALUES (?, ?, ?, ?, ?)')
    }
  }

  static open (path: string, synchronous: SynchronousLevel): SqliteTransferWriter {
    const made = path !== ':memory:' && !existsSync(path) ? path : undefined
    return new SqliteTransferWriter(open(path, synchronous, false), made)
  }

  async begin (): Promise<Counts> {
    this.db.exec('BEGIN IMMEDIATE')
    return counts(this.db, 0)
  }

  async write (r: DataRecord, origin: RecordOrigin, replaceSettings: boolean): Promise<void> {
    try {
      switch (r.type) {
        case 'setting': (replaceSettings ? this.stmts.replaceSetting : this.stmts.keepSetting).run(r.name, r.value); break
        case 'apiKey': this.stmts.key.run(r.id, r.name, r.hash, scopesText(r.scopes), toIso(r.createdAt), toIso(r.expiresAt), toIso(r.lastUsedAt), toIso(r.revokedAt)); break
        case 'pet': this.stmts.pet.run(r.id, r.name, r.categoryId, r.status); break
        case 'idempotencyKey': this.stmts.idem.run(r.apiKeyId, r.key, r.fingerprint, r.petId, r.createdAt); break
      }
    } catch (err) {
      if (isConstraint(err, 'unique')) throw recordRefused(r, origin, 'unique')
      if (isConstraint(err, 'reference')) throw recordRefused(r, origin, 'reference')
      throw err
    }
  }

  async commit (): Promise<void> {
    this.db.exec('COMMIT')
    this.made = undefined
  }

  async rollback (): Promise<void> {
    if (this.db.inTransaction) this.db.exec('ROLLBACK')
  }

  /** A database this writer made and never committed into is removed: a failed load leaves the path as it was. */
  async close (): Promise<void> {
    if (this.db.open) this.db.close()
    if (this.made !== undefined) for (const f of [this.made, `${this.made}-wal`, `${this.made}-shm`]) rmSync(f, { force: true })
  }
}
