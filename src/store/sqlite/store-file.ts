import { closeSync, fstatSync, openSync, readSync, realpathSync, renameSync, statSync, type Stats } from 'node:fs'
import type { StoreGoneReason } from '../../errors.js'

/*
 * A running store holds its database open by descriptor: if the path is unlinked, moved or replaced,
 * SQLite goes on writing into a file no later start opens, and a file overwritten in place would get
 * this store's log. StoreFile tells when the file at the path is no longer the one opened (same
 * inodes, and this store's id in the header's application_id). See docs/explanation/durability.md.
 */

export interface FileId { dev: number, ino: number }

export interface Gone { reason: StoreGoneReason, what: string }

const APPLICATION_ID_OFFSET = 68
const HEADER_BYTES = 100
const MAGIC = Buffer.from('SQLite format 3\0', 'latin1')

const idOf = (st: Stats): FileId => ({ dev: st.dev, ino: st.ino })
const same = (a: FileId, b: FileId): boolean => a.dev === b.dev && a.ino === b.ino
const shown = (id: FileId): string => `${id.dev}:${id.ino}`

/** Lets another connection (the writer thread's) check the same files. */
export interface StoreFileIdentity { path: string, db: FileId, wal: FileId | undefined, shm: FileId | undefined, storeId: number }

export class StoreFile {
  private readonly header = Buffer.alloc(HEADER_BYTES)

  /** `idAtOpen`: the header's id at open, taken too until a checkpoint has written this store's (0 in a store that had none). */
  private constructor (readonly identity: StoreFileIdentity, private fd: number | undefined, public idAtOpen: number | undefined) {}

  static open (path: string, storeId: number, withWal: boolean): StoreFile {
    const real = realpathSync(path)
    const fd = openSync(real, 'r')
    try {
      const walAt = (suffix: string) => withWal ? idOf(statSync(`${real}${suffix}`)) : undefined
      const file = new StoreFile({ path: real, db: idOf(fstatSync(fd)), wal: walAt('-wal'), shm: walAt('-shm'), storeId }, fd, undefined)
      file.idAtOpen = file.headerId()
      return file
    } catch (err) {
      closeSync(fd)
      throw err
    }
  }

  /** Gone at once when the path is another file already. */
  static of (identity: StoreFileIdentity, idAtOpen: number | undefined): StoreFile {
    let fd: number | undefined
    try {
      fd = openSync(identity.path, 'r')
    } catch {}
    return new StoreFile(identity, fd, idAtOpen)
  }

  private headerId (): number | undefined {
    if (this.fd === undefined) return undefined
    const n = readSync(this.fd, this.header, 0, HEADER_BYTES, 0)
    if (n < HEADER_BYTES || !this.header.subarray(0, MAGIC.length).equals(MAGIC)) return undefined
    return this.header.readInt32BE(APPLICATION_ID_OFFSET)
  }

  /** Undefined while the files at the path are this store's; else why not. */
  check (): Gone | undefined {
    const { path, db, wal, storeId } = this.identity
    const now = statSync(path, { throwIfNoEntry: false })
    if (now === undefined) return { reason: 'removed', what: `${path} no longer exists (removed or moved away)` }
    if (!same(idOf(now), db)) return { reason: 'replaced', what: `${path} is another file now (device:inode ${shown(idOf(now))}, opened as ${shown(db)}): it was moved or copied over` }
    if (wal !== undefined) {
      const log = statSync(`${path}-wal`, { throwIfNoEntry: false })
      if (log === undefined) return { reason: 'removed', what: `its write-ahead log ${path}-wal no longer exists (removed or moved away)` }
      if (!same(idOf(log), wal)) return { reason: 'replaced', what: `its write-ahead log ${path}-wal is another file now` }
    }
    if (this.fd === undefined) return { reason: 'replaced', what: `${path} is another file now` }
    const id = this.headerId()
    if (id === undefined) return { reason: 'overwritten', what: `${path} was overwritten in place (no SQLite header at its start)` }
    if (id === storeId) this.idAtOpen = undefined
    else if (id !== this.idAtOpen) return { reason: 'overwritten', what: `${path} was overwritten in place (its header names store ${id}, this is store ${storeId})` }
    return undefined
  }

  /** Moves this store's -wal and -shm (if still its own) away from the path; returns the log's new name. */
  setAside (stamp: string): string | undefined {
    const { path, wal, shm } = this.identity
    let moved: string | undefined
    for (const [suffix, id] of [['-wal', wal], ['-shm', shm]] as const) {
      const at = `${path}${suffix}`
      const st = statSync(at, { throwIfNoEntry: false })
      if (id === undefined || st === undefined || !same(idOf(st), id)) continue
      const to = `${at}.gone-${stamp}`
      renameSync(at, to)
      if (suffix === '-wal') moved = to
    }
    return moved
  }

  close (): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }
}

/** No database at `path`: no file, or an empty one (SQLite would make a new database of it). */
export function isNew (path: string): boolean {
  const st = statSync(path, { throwIfNoEntry: false })
  return st === undefined || st.size === 0
}
