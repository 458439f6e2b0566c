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

function check (): CheckResponse {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS })
    try {
      // The first read: a file that is no database, or a lock held elsewhere, shows here, apart from
      // what quick_check finds in the pages.
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

parentPort!.postMessage(check() satisfies CheckResponse)
