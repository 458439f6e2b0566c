import { existsSync, rmSync } from 'node:fs'
import type Database from 'better-sqlite3'
import { scopesText } from '../../schemas/scopes.js'
import type { TransferWriter } from '../transfer/contract.js'
import { type CountRow, countsSql, TransferReader, toCounts } from '../transfer/reader.js'
import { type Counts, type DataRecord, isoTime, recordRefused } from '../transfer/records.js'
import { openSqlite, type SynchronousLevel } from './connection.js'
import { migrateSqlite } from './migrations.js'
import { refuseForeignStore, refuseNewWhereDataWas, StoreMissingError } from './start-checks.js'
import { isNew } from './store-file.js'

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

/** SQLite orders text by bytes already, and keeps created_at in epoch ms. */
const dialect = { kind: 'sqlite', byBytes: '', param: '?', time: (ms: number) => ms } as const

/**
 * A read transaction on its own connection: in WAL mode it sees one snapshot from its first read
 * to its end, while the server keeps writing. Rows are streamed with iterate(), so memory stays flat.
 */
export function openSqliteReader (path: string, synchronous: SynchronousLevel): TransferReader {
  const db = open(path, synchronous, true)
  return new TransferReader({
    ...dialect,
    // Deferred: the snapshot starts with the first read, the counts.
    begin: async () => { db.exec('BEGIN') },
    async * rows<R> (sql: string, params: unknown[] = []) { yield * db.prepare(sql).iterate(...params) as IterableIterator<R> },
    end: async () => { if (db.inTransaction) db.exec('COMMIT') },
    close: async () => { if (db.open) db.close() }
  })
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
    return toCounts(this.db.prepare(countsSql(dialect.param)).get(0) as CountRow)
  }

  async write (r: DataRecord & { line?: number }, replaceSettings: boolean): Promise<void> {
    try {
      switch (r.type) {
        case 'setting': (replaceSettings ? this.stmts.replaceSetting : this.stmts.keepSetting).run(r.name, r.value); break
        case 'apiKey': this.stmts.key.run(r.id, r.name, r.hash, scopesText(r.scopes), isoTime(r.createdAt), isoTime(r.expiresAt), isoTime(r.lastUsedAt), isoTime(r.revokedAt)); break
        case 'pet': this.stmts.pet.run(r.id, r.name, r.categoryId, r.status); break
        case 'idempotencyKey': this.stmts.idem.run(r.apiKeyId, r.key, r.fingerprint, r.petId, r.createdAt); break
      }
    } catch (err) {
      const code = (err as { code?: unknown }).code
      if (code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE') throw recordRefused(r, 'unique')
      if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw recordRefused(r, 'reference')
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
