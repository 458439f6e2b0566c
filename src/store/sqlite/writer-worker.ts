/*
 * The SQLite background thread: the checkpoints, and the writes nobody waits for (API keys'
 * last-used times, the hourly purge of expired Idempotency-Keys), on a connection of its own at the
 * store's synchronous level, so their copying and their fsyncs never stall the event loop. Creates
 * are committed on the event loop and flushed on libuv's thread pool (index.ts, wal-flush.ts).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { isUnavailableError, openSqlite, type SynchronousLevel } from './connection.js'
import { prepareWrites } from './writes.js'

export type WriterOp =
  | { op: 'checkpoint' }
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
// Checkpoints are asked for by the store (checkpoint below), never run by a commit.
db.pragma('wal_autocheckpoint = 0')
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
    // A RESTART checkpoint holds the write lock while it copies every frame (the store's commits
    // retry meanwhile), syncing the WAL before and the database file after, at this connection's
    // level; the next commit then writes the WAL from its beginning again, so the file stays the
    // same size instead of growing while commits keep coming.
    const result = req.op === 'checkpoint'
      ? db.pragma('wal_checkpoint(RESTART)')
      : req.op === 'touchApiKeys' ? writes.touchApiKeys(req.entries) : writes.purgeIdempotencyKeys(req.beforeMs)
    port.postMessage({ id: req.id, ok: true, result } satisfies WriterResponse)
  } catch (err) {
    const e = err as { message?: string, code?: string }
    port.postMessage({ id: req.id, ok: false, unavailable: isUnavailableError(err), message: String(e.message), code: e.code } satisfies WriterResponse)
  }
})
