import { chmod, rm, stat } from 'node:fs/promises'
import Database from 'better-sqlite3'
import { partialPath, publish } from '../files.js'
import type { Progress } from '../transfer/contract.js'
import { BUSY_TIMEOUT_MS } from './connection.js'
import { refuseForeignStore } from './start-checks.js'

const STEP_FRACTION = 50
const ALL_PAGES = 0x7fffffff

/**
 * SQLite's online backup while servers keep writing. A write between steps restarts it, which a
 * steady stream of creates could repeat forever, so after one restart the rest goes in ONE step (a
 * read transaction, which in WAL mode blocks no writer). The copy is checked, made 0600 and fsynced
 * under a temporary name before it is renamed to `dest`.
 */
export async function backupSqlite (source: string, dest: string, progress: Progress) {
  // A backup of another store moved over the path would be kept as this one's.
  refuseForeignStore(source, 'command')
  const tmp = partialPath(dest)
  try {
    let db: Database.Database
    try {
      db = new Database(source, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS })
    } catch (err) {
      throw new Error(`cannot open the SQLite database ${source}: ${(err as Error).message}`)
    }
    let pages = 0
    try {
      progress.start(Number(db.pragma('page_count', { simple: true })), 'pages')
      let restarted = false
      let lastRemaining = Number.POSITIVE_INFINITY
      const done = await db.backup(tmp, {
        progress: ({ totalPages, remainingPages }) => {
          if (remainingPages > lastRemaining) restarted = true
          lastRemaining = remainingPages
          progress.update(totalPages - remainingPages)
          return restarted ? ALL_PAGES : Math.max(100, Math.ceil(totalPages / STEP_FRACTION))
        }
      })
      pages = done.totalPages
      progress.update(pages)
    } finally {
      progress.stop()
      db.close()
    }
    const check = verify(tmp)
    await chmod(tmp, 0o600)
    const bytes = (await stat(tmp)).size
    await publish(tmp, dest)
    return { pages, bytes, ...check }
  } catch (err) {
    await Promise.all([tmp, `${tmp}-wal`, `${tmp}-shm`, `${tmp}-journal`].map(f => rm(f, { force: true })))
    throw err
  }
}

function verify (path: string): { pets: number, apiKeys: number, integrity: 'ok' } {
  const db = new Database(path, { fileMustExist: true })
  try {
    const problems = db.prepare('PRAGMA integrity_check').pluck().all() as string[]
    if (problems.length !== 1 || problems[0] !== 'ok') throw new Error(`the backup failed integrity_check: ${problems.slice(0, 5).join('; ')}`)
    const n = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number
    return { pets: n('pets'), apiKeys: n('api_keys'), integrity: 'ok' }
  } finally {
    // Closing the last connection removes the -wal: the backup is one file.
    db.close()
  }
}
