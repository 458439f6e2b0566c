/*
 * The process a server start checks its SQLite file in (opening.ts), so the check does not hold up
 * the event loop while the server already answers /healthz, and a shutdown can stop it. Its
 * connection is read-only: nothing is written into a file that has not passed the check.
 * Run as `node check-worker.js PATH`, its answer sent over the IPC channel.
 */
import Database from 'better-sqlite3'
import { BUSY_TIMEOUT_MS } from './connection.js'
import { type CheckResponse, quickCheck } from './start-checks.js'

const path = process.argv[2]!

function check (): CheckResponse {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS })
    try {
      // One read transaction: its first read waits for a lock held elsewhere (SQLite's busy handler),
      // and a file that is no database shows there, apart from what quick_check then finds in the pages.
      db.exec('BEGIN')
      db.pragma('schema_version')
      const problem = quickCheck(db)
      return problem === undefined ? { passed: true } : { passed: false, found: problem.found }
    } finally {
      db.close()
    }
  } catch (err) {
    const e = err as { message?: unknown, code?: unknown }
    return { passed: false, error: { message: String(e.message), code: typeof e.code === 'string' ? e.code : undefined } }
  }
}

// Sent, then the channel closed: the process ends.
process.send!(check() satisfies CheckResponse, () => { process.disconnect() })
