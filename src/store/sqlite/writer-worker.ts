/*
 * The SQLite background thread: the checkpoints, and the writes nobody waits for (API keys'
 * last-used times, the hourly purge of expired Idempotency-Keys), on a connection of its own at the
 * store's synchronous level, so their copying and their fsyncs never stall the event loop. Creates
 * are committed on the event loop and flushed on libuv's thread pool (index.ts, wal-flush.ts).
 */
import { parentPort, workerData } from 'node:worker_threads'
import { BUSY_TIMEOUT_MS, isUnavailableError, openSqlite, type SynchronousLevel } from './connection.js'
import { type Gone, StoreFile, type StoreFileIdentity } from './store-file.js'
import { prepareWrites } from './writes.js'

export type WriterOp =
  | { op: 'checkpoint' }
  | { op: 'touchApiKeys', entries: Array<[number, string]> }
  | { op: 'purgeIdempotencyKeys', beforeMs: number }
export type WriterRequest = WriterOp & { id: number }
export type WriterResponse =
  | { ready: true }
  | { id: number, ok: true, result: unknown }
  | { id: number, ok: false, unavailable: boolean, message: string, code: string | undefined, gone?: Gone }

/** How long a RESTART checkpoint waits for the write lock and for readers of older snapshots. */
const RESTART_WAIT_MS = 20

const { path, synchronous, file: opened } = workerData as { path: string, synchronous: SynchronousLevel, file: { identity: StoreFileIdentity, idAtOpen: number | undefined } }
const port = parentPort!
// Every task first checks that the file at the path is still the store's (store-file.ts): this
// thread's checkpoints copy the WAL into the database file, never into another one.
const file = StoreFile.of(opened.identity, opened.idAtOpen)
// Never another file: if the one at the path is no longer the store's, this thread does not start (a
// connection of its own to another file would be that file's last, and checkpoint into it as it closes).
const foundGone = file.check()
if (foundGone !== undefined) throw new Error(`the SQLite writer thread did not start: ${foundGone.what}`)
const db = openSqlite(path, synchronous, { mustExist: true })
// Checkpoints are asked for by the store (checkpoint below), never run by a commit.
db.pragma('wal_autocheckpoint = 0')
const writes = prepareWrites(db)
// Up: the connection is open with its settings and the statements are prepared (readiness waits for this).
port.postMessage({ ready: true } satisfies WriterResponse)

/**
 * Copies the WAL into the database file, syncing the WAL before and the file after (at this
 * connection's level), and lets the next commit write the WAL from its beginning again, so it does
 * not grow while commits keep coming. PASSIVE first, which waits for no one and copies what it can;
 * then RESTART, which holds the write lock (the store's commits retry meanwhile) to copy the rest and
 * waits for readers of older snapshots, but only briefly: a reader that holds one longer (an export)
 * makes it give up, to be tried again at the next checkpoint, rather than keep the writers out.
 */
function checkpoint (): unknown {
  db.pragma('wal_checkpoint(PASSIVE)')
  db.pragma(`busy_timeout = ${RESTART_WAIT_MS}`)
  try {
    return db.pragma('wal_checkpoint(RESTART)')
  } finally {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  }
}

port.on('message', (req: WriterRequest | { op: 'close' }) => {
  if (req.op === 'close') {
    db.close()
    file.close()
    port.close()
    return
  }
  const gone = file.check()
  if (gone !== undefined) {
    port.postMessage({ id: req.id, ok: false, unavailable: true, message: gone.what, code: undefined, gone } satisfies WriterResponse)
    return
  }
  try {
    const result = req.op === 'checkpoint'
      ? checkpoint()
      : req.op === 'touchApiKeys' ? writes.touchApiKeys(req.entries) : writes.purgeIdempotencyKeys(req.beforeMs)
    // This thread's own writes grow the WAL too: each is followed by a checkpoint (one that cannot
    // run now, the database busy, is run again after the next write or at the store's next request).
    if (req.op !== 'checkpoint') {
      try {
        checkpoint()
      } catch {}
    }
    port.postMessage({ id: req.id, ok: true, result } satisfies WriterResponse)
  } catch (err) {
    const e = err as { message?: string, code?: string }
    port.postMessage({ id: req.id, ok: false, unavailable: isUnavailableError(err), message: String(e.message), code: e.code } satisfies WriterResponse)
  }
})
