import { closeSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'

/** How long a statement waits for another connection's lock before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000

export type SynchronousLevel = 'OFF' | 'NORMAL' | 'FULL' | 'EXTRA'
const SYNC_VALUES: Record<SynchronousLevel, number> = { OFF: 0, NORMAL: 1, FULL: 2, EXTRA: 3 }

/**
 * Opens a connection with the settings the durability promise rests on, and reads each back:
 * better-sqlite3 would otherwise leave WAL databases at synchronous=NORMAL, which can lose the last
 * commits on power loss.
 */
export function openSqlite (path: string, synchronous: SynchronousLevel, opts: { mustExist?: boolean } = {}): Database.Database {
  if (path !== ':memory:' && opts.mustExist !== true) {
    mkdirSync(dirname(path), { recursive: true })
    createPrivate(path)
  }
  const db = new Database(path, { fileMustExist: opts.mustExist === true })
  db.defaultSafeIntegers(true)
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  db.pragma('foreign_keys = ON')
  const mode = db.pragma('journal_mode = WAL', { simple: true })
  if (path !== ':memory:' && mode !== 'wal') throw new Error(`SQLite refused WAL mode (journal_mode is ${String(mode)})`)
  setSynchronous(db, synchronous)
  return db
}

/**
 * Creates the database file, empty, readable and writable by this user only (0600), unless it
 * exists: SQLite would create it 0644, and it creates the -wal and -shm files with the mode of the
 * database file. An existing file keeps its mode.
 */
function createPrivate (path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600))
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'EEXIST') throw err
  }
}

/** Sets the connection's synchronous level and reads it back. */
export function setSynchronous (db: Database.Database, synchronous: SynchronousLevel): void {
  db.pragma(`synchronous = ${synchronous}`)
  const level = Number(db.pragma('synchronous', { simple: true }))
  if (level !== SYNC_VALUES[synchronous]) throw new Error(`SQLite synchronous is ${level}, expected ${synchronous}`)
}

const UNAVAILABLE = /^SQLITE_(FULL|READONLY|IOERR|BUSY|LOCKED|CANTOPEN|CORRUPT|NOTADB|PROTOCOL|NOMEM)/

/** Whether a better-sqlite3 error means the database cannot take work now (as opposed to a bug). */
export function isUnavailableError (err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && UNAVAILABLE.test(code)) return true
  // A request that arrives after the store was closed (shutdown) is refused, not failed.
  return err instanceof TypeError && err.message === 'The database connection is not open'
}
