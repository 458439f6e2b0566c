import { closeSync, constants, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'

export const BUSY_TIMEOUT_MS = 5000

export type SynchronousLevel = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA'
const SYNC_VALUES: Record<SynchronousLevel, number> = { OFF: 0, NORMAL: 1, FULL: 2, EXTRA: 3 }

/** Reads each setting back; better-sqlite3 would leave WAL databases at NORMAL, which can lose commits on power loss. */
export function openSqlite (path: string, synchronous: SynchronousLevel, opts: { mustExist?: boolean } = {}): Database.Database {
  if (path !== ':memory:' && opts.mustExist !== true) {
    mkdirSync(dirname(path), { recursive: true })
    // 0600 unless it exists: SQLite would create it 0644, and gives -wal and -shm the database's mode.
    closeSync(openSync(path, constants.O_RDONLY | constants.O_CREAT, 0o600))
  }
  const db = new Database(path, { fileMustExist: opts.mustExist === true, timeout: BUSY_TIMEOUT_MS })
  db.defaultSafeIntegers(true)
  db.pragma('foreign_keys = ON')
  const mode = db.pragma('journal_mode = WAL', { simple: true })
  if (path !== ':memory:' && mode !== 'wal') throw new Error(`SQLite refused WAL mode (journal_mode is ${String(mode)})`)
  setSynchronous(db, synchronous)
  return db
}

export function setSynchronous (db: Database.Database, synchronous: SynchronousLevel): void {
  db.pragma(`synchronous = ${synchronous}`)
  const level = Number(db.pragma('synchronous', { simple: true }))
  if (level !== SYNC_VALUES[synchronous]) throw new Error(`SQLite synchronous is ${level}, expected ${synchronous}`)
}

const UNAVAILABLE = /^SQLITE_(FULL|READONLY|IOERR|BUSY|LOCKED|CANTOPEN|CORRUPT|NOTADB|PROTOCOL|NOMEM)/

export function isUnavailableError (err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && UNAVAILABLE.test(code)) return true
  // After close (shutdown) a request is refused, not failed.
  return err instanceof TypeError && err.message === 'The database connection is not open'
}
