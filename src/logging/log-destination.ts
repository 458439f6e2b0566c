import { fstatSync, write, writeSync } from 'node:fs'

/** How long a write that found a non-blocking pipe full (EAGAIN) waits before it tries again (as sonic-boom). */
const RETRY_BUSY_MS = 100
/** How long lines gather before they are written: one write for all the lines of a few milliseconds. */
const GATHER_MS = 5
/** Longest the synchronous write at exit waits for a full pipe to drain (as the entry's end() wait). */
const EXIT_WAIT_MS = 2000
/** The batch buffer's first size; it doubles when a batch needs more (a batch holds at most maxBytes). */
const FIRST_BUFFER_BYTES = 64 * 1024
/** A batch buffer this large or smaller is kept for the next batch once written; a larger one is let go. */
const KEEP_BUFFER_BYTES = 1024 * 1024

/**
 * Where the JSON log lines go when stdout is not a terminal: each line is copied at once into a batch
 * buffer (so no line stays on V8's heap while it waits, where lines held for milliseconds at tens of
 * thousands a second would survive collections and make the young generation grow), and the batch
 * is written GATHER_MS after its first line with one write that never waits: to a pipe or socket,
 * non-blocking, from this thread; to a file, an asynchronous fs.write from libuv's thread pool (see
 * `direct`). So a slow reader of stdout never stalls request handling. While a write is under way or
 * waits out a full pipe, the lines that come meanwhile wait and go out together with the next one.
 *
 * Used instead of pino.destination() (sonic-boom) because of what an exit needs. sonic-boom 4.2.1,
 * asynchronous, keeps a batch whose write met a full pipe (EAGAIN) as "being written" while it waits
 * to retry, and its synchronous flush at 'exit' skips that batch: the scenario of
 * test/log-destination.test.ts's exit test (25,000 lines through pino into a pipe read after 0.5 s,
 * process.exit after 50 ms) delivered 24,968 lines with one of them cut, in each of 3 runs; this class
 * delivers all 25,000. With a reader that read nothing and then exited, pino.destination's exit did not
 * end (still running after 10 minutes), where this one gives up after EXIT_WAIT_MS.
 * Gathering lines for a few milliseconds keeps the write's cost per line negligible. It keeps what
 * the service needs from sonic-boom: the byte bound on what waits in
 * memory (lines past it are dropped, counted in `dropped`), partial writes continued, EAGAIN
 * retried, a reader that has gone (EPIPE or any other error) ends the writing instead of throwing,
 * and end() waits until everything written before it is out. Lines still waiting when the process
 * exits without end() are written synchronously at 'exit' (as pino does for its own destination;
 * see writeRestSync). A crash that skips 'exit' (SIGKILL, abort, an OOM kill) loses the lines of
 * the last few milliseconds and of a write under way.
 */
export class LogDestination {
  /**
   * Lines lost: refused because maxBytes were already waiting or the destination had failed, and
   * those waiting (or being written: a cut one counts) when it failed. Shown in /metrics.
   */
  dropped = 0
  /** The batch being gathered: its first pendingBytes bytes. */
  private pending: Buffer = Buffer.allocUnsafeSlow(FIRST_BUFFER_BYTES)
  private pendingBytes = 0
  /** A written batch's buffer, kept for the next batch. */
  private spare: Buffer | undefined
  /** The batch being written (what of it is left to write), and the buffer it lives in. */
  private inFlight: Buffer | undefined
  private inFlightBuffer: Buffer | undefined
  private inFlightBytes = 0
  private timer: NodeJS.Timeout | undefined
  /** An asynchronous write is under way in the thread pool (not waiting out an EAGAIN retry). */
  private writing = false
  private failed = false
  private readonly ended: Array<() => void> = []

  /**
   * A pipe or socket (stdout under a log shipper, systemd, a container runtime): non-blocking once
   * Node has opened it, so it is written from this thread, where a write never waits (a full pipe
   * answers EAGAIN at once) and how much it took is always known. From the thread pool, a write whose
   * answer had not come back when the process exited left its batch unknown: written or not, cut or
   * not (lost at an exit under load, test/log-destination.test.ts). A file (or a terminal) is written
   * from the thread pool, where a slow disk cannot stall the event loop.
   */
  private readonly direct: boolean

  constructor (private readonly fd: number, private readonly maxBytes: number) {
    let stat
    try { stat = fstatSync(fd) } catch { stat = undefined }
    this.direct = stat !== undefined && (stat.isFIFO() || stat.isSocket())
    process.once('exit', this.writeRestSync)
  }

  /** Queues one line (pino calls this for every line); false when it was dropped. */
  write (line: string): boolean {
    const bytes = Buffer.byteLength(line)
    if (this.failed || this.pendingBytes + this.inFlightBytes + bytes > this.maxBytes) {
      this.dropped++
      return false
    }
    if (this.pendingBytes + bytes > this.pending.length) this.grow(this.pendingBytes + bytes)
    this.pendingBytes += this.pending.write(line, this.pendingBytes, 'utf8')
    if (this.inFlight === undefined) this.timer ??= setTimeout(this.flush, GATHER_MS)
    return true
  }

  /** Resolves when every line queued so far is written (or can never be: the destination failed). */
  async end (): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.flush()
    }
    if (this.idle()) return
    await new Promise<void>(resolve => this.ended.push(resolve))
  }

  private idle (): boolean {
    return this.failed || (this.inFlight === undefined && this.pendingBytes === 0)
  }

  /** A batch buffer of at least `bytes`, holding the batch gathered so far. */
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
    this.inFlightBuffer = this.pending
    this.inFlight = this.pending.subarray(0, this.pendingBytes)
    this.inFlightBytes = this.pendingBytes
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
    if (n < this.inFlightBytes) {
      // A partial write (a pipe that took less than all): the rest goes next.
      this.inFlight = this.inFlight!.subarray(n)
      this.inFlightBytes -= n
      this.writeInFlight()
      return
    }
    this.inFlight = undefined
    this.inFlightBytes = 0
    if (this.inFlightBuffer!.length <= KEEP_BUFFER_BYTES) this.spare = this.inFlightBuffer
    this.inFlightBuffer = undefined
    if (this.pendingBytes !== 0) {
      this.timer ??= setTimeout(this.flush, GATHER_MS)
      return
    }
    for (const resolve of this.ended.splice(0)) resolve()
  }

  /** The reader has gone (EPIPE) or the descriptor failed: nothing more can be written. */
  private fail (): void {
    this.failed = true
    this.dropped += countLines(this.pending.subarray(0, this.pendingBytes)) + (this.inFlight === undefined ? 0 : countLines(this.inFlight))
    this.pendingBytes = 0
    this.inFlight = undefined
    this.inFlightBuffer = undefined
    this.inFlightBytes = 0
    for (const resolve of this.ended.splice(0)) resolve()
  }

  /**
   * At 'exit' without end() (close-with-grace's timeout or second signal, any process.exit): what
   * still waits is written synchronously — the batch of a write that was waiting out an EAGAIN retry
   * first, then the pending lines — continuing partial writes and waiting for a full pipe (stdout is
   * non-blocking once Node has opened it) for at most EXIT_WAIT_MS, so a stuck reader cannot hold the
   * exit. A batch whose write is under way in the thread pool is left to it (writing it again could
   * repeat or cut its lines).
   */
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

  /** Writes all of `data` or gives up (the pipe stayed full past the deadline, or the reader has gone). */
  private writeAllSync (data: Buffer, deadline: number): boolean {
    const pause = new Int32Array(new SharedArrayBuffer(4))
    while (data.length > 0) {
      try {
        data = data.subarray(writeSync(this.fd, data))
      } catch (err) {
        // Exiting anyway; a log that cannot be written must not turn the exit into a crash.
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() >= deadline) return false
        Atomics.wait(pause, 0, 0, 5)
      }
    }
    return true
  }
}

/** Lines in a batch (each JSON line ends with a newline); only counted when a destination fails. */
function countLines (data: Buffer): number {
  let n = 0
  for (let i = data.indexOf(0x0a); i !== -1; i = data.indexOf(0x0a, i + 1)) n++
  return n
}
