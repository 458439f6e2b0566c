/*
 * The SQLite writer thread. Commits (and their fsync) happen here, so a durable write never stalls
 * the event loop that answers reads. The main thread sends one batch at a time (see GroupCommit).
 */
import { parentPort, workerData } from 'node:worker_threads'
import type { CreateItem } from '../creates.js'
import { isUnavailableError, openSqlite, type SynchronousLevel } from './connection.js'
import { prepareWrites } from './writes.js'

export type WriterOp =
  | { op: 'createPets', items: CreateItem[] }
  | { op: 'touchApiKeys', entries: Array<[number, string]> }
  | { op: 'purgeIdempotencyKeys', beforeMs: number }
export type WriterRequest = WriterOp & { id: number }
export type WriterResponse =
  | { ready: true }
  | { id: number, ok: true, result: unknown }
  | { id: number, ok: false, unavailable: boolean, message: string, code: string | undefined }

const { path, synchronous } = workerData as { path: string, synchronous: SynchronousLevel }
const port = parentPort!
const db = openSqlite(path, synchronous)
const writes = prepareWrites(db)
// Up: the connection is open with its settings and the statements are prepared (readiness waits for this).
port.postMessage({ ready: true } satisfies WriterResponse)

port.on('message', (req: WriterRequest | { op: 'close' }) => {
  if (req.op === 'close') {
    db.close()
    port.close()
    return
  }
  try {
    const result = req.op === 'createPets'
      ? writes.createPets(req.items)
      : req.op === 'touchApiKeys' ? writes.touchApiKeys(req.entries) : writes.purgeIdempotencyKeys(req.beforeMs)
    port.postMessage({ id: req.id, ok: true, result } satisfies WriterResponse)
  } catch (err) {
    const e = err as { message?: string, code?: string }
    port.postMessage({ id: req.id, ok: false, unavailable: isUnavailableError(err), message: String(e.message), code: e.code } satisfies WriterResponse)
  }
})
