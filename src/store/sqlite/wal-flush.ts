import { closeSync, fdatasync, fsyncSync, openSync, realpathSync } from 'node:fs'
import { dirname } from 'node:path'

/**
 * The flush of a commit made on the event loop: fdatasync of the WAL file, on libuv's thread pool.
 *
 * The read connection commits the creates itself at synchronous=NORMAL: SQLite writes the
 * transaction's frames to the WAL and makes them visible, without waiting for the disk (NORMAL still
 * syncs the WAL header when the log restarts from its beginning, which its ordering needs). A batch
 * is acknowledged only once this flush, started after its commit returned, has completed: what
 * synchronous=FULL does at every commit, moved off the event loop. fsync works on the file, not the
 * descriptor, so this descriptor flushes what SQLite's own wrote.
 *
 * Once a flush fails, nothing after it can be trusted to reach the disk (Linux reports a writeback
 * error once and may drop the pages): the flusher stays failed and the store refuses writes.
 */
export class WalFlush {
  private fd: number | undefined
  private failed: Error | undefined
  private readonly pending = new Set<Promise<void>>()

  constructor (private readonly dbPath: string) {}

  /**
   * Opens the WAL (the read connection has created it) and makes its directory entry durable: a
   * WAL file created by this open was never synced, and SQLite syncs a new WAL's directory only on
   * the WAL's first sync through its own connection.
   */
  open (): void {
    // SQLite names the WAL after the database file's real path (symbolic links resolved).
    const real = realpathSync(this.dbPath)
    this.fd = openSync(`${real}-wal`, 'r+')
    const dir = openSync(dirname(real), 'r')
    try {
      fsyncSync(dir)
    } finally {
      closeSync(dir)
    }
  }

  /** The error of the flush that failed, once one has. */
  get error (): Error | undefined {
    return this.failed
  }

  /** Resolves once everything written to the WAL before the call is on the disk. */
  async flush (): Promise<void> {
    if (this.failed !== undefined) throw this.failed
    const fd = this.fd
    if (fd === undefined) throw new Error('the WAL flusher is not open')
    const done = new Promise<void>((resolve, reject) => {
      fdatasync(fd, (err) => {
        if (err === null) resolve()
        else {
          this.failed ??= err
          reject(err)
        }
      })
    })
    this.pending.add(done)
    try {
      await done
    } finally {
      this.pending.delete(done)
    }
  }

  /** Closes the descriptor once the flushes under way have completed. */
  async close (): Promise<void> {
    await Promise.allSettled([...this.pending])
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }
}
