import { fstatSync, write, writeSync } from 'node:fs'

const RETRY_BUSY_MS = 100
const GATHER_MS = 5
/** Longest the synchronous write at exit waits for a full pipe (as the entry's end() wait). */
const EXIT_WAIT_MS = 2000
const FIRST_BUFFER_BYTES = 64 * 1024
const KEEP_BUFFER_BYTES = 1024 * 1024

/**
 * The JSON log destination when stdout is not a terminal: each line is copied at once into a batch
 * buffer (off V8's heap) and the batch written GATHER_MS after its first line with one write that
 * never waits (non-blocking from this thread to a pipe or socket, fs.write from the thread pool to a
 * file), so a slow reader of stdout never stalls requests. Past maxBytes waiting, lines are dropped.
 *
 * Why not pino.destination({ sync: false }) (pino 10.4, sonic-boom 4.2.1), each reason a test of
 * test/logging/log-destination.test.ts that fails with it: its exit flush skips a batch waiting out
 * EAGAIN (the exit test, 25,000 lines through pino into a pipe read after 0.5 s, process.exit after
 * 50 ms: a batch of about 125 lines missing in 2 of 6 runs; this class delivers all 25,000 in order);
 * and with a reader that never reads, its exit had not ended 40 s later, where this one gives up
 * after EXIT_WAIT_MS. A crash that skips 'exit' (SIGKILL) loses the last few ms of lines.
 */
export class LogDestination {
  /** Lines lost: refused past maxBytes or after a failure, and those waiting when it failed. */
  dropped = 0
  private pending: Buffer = Buffer.allocUnsafeSlow(FIRST_BUFFER_BYTES)
  private pendingBytes = 0
  private spare: Buffer | undefined
  private inFlight: Buffer | undefined
  private timer: NodeJS.Timeout | undefined
  private writing = false
  private failed = false
  private readonly ended: Array<() => void> = []

  /**
   * A pipe or socket is written from this thread (non-blocking: how much a write took is always known;
   * a thread-pool write pending at exit leaves its batch unknown). A file goes to the thread pool.
   */
  private readonly direct: boolean

  constructor (private readonly fd: number, private readonly maxBytes: number) {
    let stat
    try { stat = fstatSync(fd) } catch { stat = undefined }
    this.direct = stat !== undefined && (stat.isFIFO() || stat.isSocket())
    process.once('exit', this.writeRestSync)
  }

  write (line: string): boolean {
    const bytes = Buffer.byteLength(line)
    if (this.failed || this.pendingBytes + (this.inFlight?.length ?? 0) + bytes > this.maxBytes) {
      this.dropped++
      return false
    }
    if (this.pendingBytes + bytes > this.pending.length) this.grow(this.pendingBytes + bytes)
    this.pendingBytes += this.pending.write(line, this.pendingBytes, 'utf8')
    if (this.inFlight === undefined) this.timer ??= setTimeout(this.flush, GATHER_MS)
    return true
  }

  async end (): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.flush()
    }
    if (this.failed || (this.inFlight === undefined && this.pendingBytes === 0)) return
    await new Promise<void>(resolve => this.ended.push(resolve))
  }

  private grow (bytes: number): void {
    let size = this.pending.length * 2
    while (size < bytes) size *= 2
    const bigger = Buffer.allocUnsafeSlow(size)
    this.pending.copy(bigger, 0, 0, this.pendingBytes)
    this.pending = bigger
  }

  private readonly flush = (): void => {
    this.timer = undefined
    if (this.inFlight !== undefined || this.pendingBytes === 0) return
    this.inFlight = this.pending.subarray(0, this.pendingBytes)
    this.pending = this.spare ?? Buffer.allocUnsafeSlow(FIRST_BUFFER_BYTES)
    this.spare = undefined
    this.pendingBytes = 0
    this.writeInFlight()
  }

  private readonly writeInFlight = (): void => {
    const data = this.inFlight
    if (data === undefined) return // written out synchronously at exit meanwhile
    if (this.direct) {
      let n: number
      try {
        n = writeSync(this.fd, data)
      } catch (err) {
        this.written(err as NodeJS.ErrnoException, 0)
        return
      }
      this.written(null, n)
      return
    }
    this.writing = true
    write(this.fd, data, this.written)
  }

  private readonly written = (err: NodeJS.ErrnoException | null, n: number): void => {
    this.writing = false
    if (err !== null) {
      if (err.code === 'EAGAIN') {
        setTimeout(this.writeInFlight, RETRY_BUSY_MS).unref()
        return
      }
      this.fail()
      return
    }
    if (n < this.inFlight!.length) {
      this.inFlight = this.inFlight!.subarray(n)
      this.writeInFlight()
      return
    }
    // A batch buffer (allocUnsafeSlow) has an ArrayBuffer of its own: all of it is kept for a later batch.
    if (this.inFlight!.buffer.byteLength <= KEEP_BUFFER_BYTES) this.spare = Buffer.from(this.inFlight!.buffer)
    this.inFlight = undefined
    if (this.pendingBytes !== 0) {
      this.timer ??= setTimeout(this.flush, GATHER_MS)
      return
    }
    for (const resolve of this.ended.splice(0)) resolve()
  }

  private fail (): void {
    this.failed = true
    this.dropped += countLines(this.pending.subarray(0, this.pendingBytes)) + (this.inFlight === undefined ? 0 : countLines(this.inFlight))
    this.pendingBytes = 0
    this.inFlight = undefined
    for (const resolve of this.ended.splice(0)) resolve()
  }

  /** At 'exit' without end(): writes what waits; a batch under way in the thread pool is left to it (no repeat or cut). */
  private readonly writeRestSync = (): void => {
    if (this.failed) return
    const deadline = Date.now() + EXIT_WAIT_MS
    if (!this.writing && this.inFlight !== undefined) {
      const data = this.inFlight
      this.inFlight = undefined
      if (!this.writeAllSync(data, deadline)) return
    }
    if (this.pendingBytes !== 0) this.writeAllSync(this.pending.subarray(0, this.pendingBytes), deadline)
    this.pendingBytes = 0
  }

  private writeAllSync (data: Buffer, deadline: number): boolean {
    const pause = new Int32Array(new SharedArrayBuffer(4))
    while (data.length > 0) {
      try {
        data = data.subarray(writeSync(this.fd, data))
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() >= deadline) return false
        Atomics.wait(pause, 0, 0, 5)
      }
    }
    return true
  }
}

function countLines (data: Buffer): number {
  let n = 0
  for (let i = data.indexOf(0x0a); i !== -1; i = data.indexOf(0x0a, i + 1)) n++
  return n
}
