import { closeSync, fdatasync, openSync, realpathSync } from 'node:fs'
import { dirname } from 'node:path'
import { promisify } from 'node:util'
import { fsyncPath } from '../files.js'

/**
 * fdatasync of the WAL on libuv's thread pool: the commits run at synchronous=NORMAL on the event
 * loop, and a batch is acknowledged only after this flush, started once its commit returned: FULL
 * moved off the event loop. fsync works on the file, so this descriptor flushes what SQLite wrote.
 * Once a flush fails nothing later can be trusted to reach the disk (Linux reports a writeback error
 * once): the flusher stays failed and the store refuses writes.
 */
export class WalFlush {
  /** The first flush's failure: set once, never cleared. */
  error: Error | undefined
  private readonly pending = new Set<Promise<void>>()

  private constructor (private fd: number | undefined) {}

  /** Syncs the directory too: SQLite syncs a new WAL's directory entry only through its own connection. */
  static async open (dbPath: string): Promise<WalFlush> {
    // SQLite names the WAL after the real path.
    const real = realpathSync(dbPath)
    await fsyncPath(dirname(real))
    return new WalFlush(openSync(`${real}-wal`, 'r+'))
  }

  /** Resolves once everything written to the WAL before the call is on the disk. */
  async flush (): Promise<void> {
    if (this.error !== undefined) throw this.error
    if (this.fd === undefined) throw new Error('the WAL flusher is not open')
    const done = promisify(fdatasync)(this.fd).catch((err: Error) => {
      this.error ??= err
      throw err
    })
    this.pending.add(done)
    await done.finally(() => this.pending.delete(done))
  }

  async close (): Promise<void> {
    await Promise.allSettled([...this.pending])
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }
}
