/*
 * The SQLite background thread: checkpoints and the writes nobody waits for, on a connection of its
 * own so their copying and fsyncs never stall the event loop.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { BUSY_TIMEOUT_MS, isUnavailableError, openSqlite, type SynchronousLevel } from './connection.js'
import { type Gone, StoreFile, type StoreFileIdentity } from './store-file.js'
import { type BackgroundWrite, prepareWrites } from './writes.js'

export type WriterOp = { op: 'checkpoint' } | BackgroundWrite
/** The thread's workerData: the database and the identity of the file its store opened. */
export interface WriterData { path: string, synchronous: SynchronousLevel, file: { identity: StoreFileIdentity, idAtOpen: number | undefined } }
export type WriterResponse =
  | { ready: true }
  | { id: number, ok: true, result: unknown }
  | { id: number, gone: Gone }
  | { id: number, ok: false, unavailable: boolean, message: string, code: string | undefined }

const RESTART_WAIT_MS = 20

const { path, synchronous, file: opened } = workerData as WriterData
const port = parentPort!
const file = StoreFile.of(opened.identity, opened.idAtOpen)
// Never another file: its own connection to it would be that file's last, and checkpoint into it on close.
const foundGone = file.check()
if (foundGone !== undefined) throw new Error(`the SQLite writer thread did not start: ${foundGone.what}`)
const db = openSqlite(path, synchronous, { mustExist: true })
db.pragma('wal_autocheckpoint = 0')
const writes = prepareWrites(db)
// Readiness waits for this.
port.postMessage({ ready: true } satisfies WriterResponse)

/**
 * PASSIVE waits for no one; RESTART then copies the rest so the WAL stops growing, but gives up
 * quickly rather than keep writers out behind a long reader (an export), and is tried again later.
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

port.on('message', (req: WriterOp & { id: number } | { op: 'close' }) => {
  if (req.op === 'close') {
    db.close()
    file.close()
    port.close()
    return
  }
  const gone = file.check()
  if (gone !== undefined) return port.postMessage({ id: req.id, gone } satisfies WriterResponse)
  try {
    const result = req.op === 'checkpoint' ? checkpoint() : writes.background(req)
    // This thread's own writes grow the WAL too; a busy checkpoint is retried after the next write.
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
