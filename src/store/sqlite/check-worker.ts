/*
 * The thread a server start checks its SQLite file on (opening.ts), so the check does not hold up the
 * event loop while the server already answers /healthz. Its connection is read-only: nothing is
 * written into a file that has not passed the check.
 */
import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'
import { BUSY_TIMEOUT_MS } from './connection.js'
import { type CheckResponse, quickCheck } from './start-checks.js'

const { path } = workerData as { path: string }

// A lock held elsewhere is waited for in slices: between two, a terminate() (a shutdown during the
// check) takes effect, where one long wait inside SQLite would hold the process's exit up.
const BUSY_SLICE_MS = 50

function check (): CheckResponse {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_SLICE_MS })
    try {
      // One read transaction: its first read waits for a lock held elsewhere, and a file that is no
      // database shows there, apart from what quick_check then finds in the pages.
      db.exec('BEGIN')
      for (const deadline = Date.now() + BUSY_TIMEOUT_MS; ;) {
        try {
          db.pragma('schema_version')
          break
        } catch (err) {
          if ((err as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err
        }
      }
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

parentPort!.postMessage(check() satisfies CheckResponse)
