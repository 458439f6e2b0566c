import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { type StoreGoneError, StoreUnavailableError } from '../../errors.js'
import type { Gone } from './store-file.js'
import type { WriterData, WriterOp, WriterResponse } from './writer-worker.js'

// Set by the production bundle (scripts/bundle.mjs): the folder of the compiled thread entries.
declare const PETSTORE_SQLITE_THREADS: string | undefined

/** The file of `name` (a thread's or a process's entry): beside this module, or the bundle's compiled one. */
export function sqliteEntry (name: 'writer-worker' | 'check-worker'): URL {
  return typeof PETSTORE_SQLITE_THREADS === 'string'
    ? new URL(`${PETSTORE_SQLITE_THREADS}${name}.js`, import.meta.url)
    : new URL(`./${name}${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url)
}

/** Started by start() or the first write; if it cannot start, requests fail as unavailable. */
export class WorkerWriter {
  private worker: Worker | undefined
  private nextId = 1
  private readonly pending = new Map<number, PromiseWithResolvers<unknown>>()
  private dead: Error | undefined
  private closed = false
  /** Resolved by the thread's first message: its connection is open. */
  private readonly up = Promise.withResolvers<void>()

  constructor (private readonly data: WriterData, private readonly onGone: (found: Gone) => StoreGoneError) {
    this.up.promise.catch(() => {}) // seen by whoever waits for it; nobody may be waiting
  }

  start (): Worker {
    if (this.worker !== undefined) return this.worker
    const entry = sqliteEntry('writer-worker')
    // A thread takes the process's flags, but its entry is a file: a process started with
    // `node --input-type=module -e …` (benchmarks, tests) would fail every thread. Given explicitly,
    // the flags are checked as a thread's (a process-wide one is refused): only when that one is there.
    const execArgv = process.execArgv.some(flag => flag.startsWith('--input-type'))
      ? process.execArgv.filter(flag => !flag.startsWith('--input-type'))
      : undefined
    // Under tsx (the sources), the thread registers tsx first.
    this.worker = entry.pathname.endsWith('.ts')
      ? new Worker(`import('tsx/esm/api').then(m => { m.register(); return import(${JSON.stringify(entry.href)}) })`, { eval: true, workerData: this.data, execArgv })
      : new Worker(entry, { workerData: this.data, execArgv })
    this.worker.on('message', (res: WriterResponse) => this.settle(res))
    this.worker.on('error', (err) => this.fail(err))
    this.worker.on('exit', (code) => this.fail(new Error(`SQLite writer thread exited with code ${code}`)))
    return this.worker
  }

  stopped (): StoreUnavailableError | undefined {
    if (this.dead !== undefined) return new StoreUnavailableError('the database writer stopped', { cause: this.dead })
    if (this.closed) return new StoreUnavailableError('the database writer stopped')
    return undefined
  }

  run<T> (req: WriterOp): Promise<T> {
    const stopped = this.stopped()
    if (stopped !== undefined) return Promise.reject(stopped)
    const worker = this.start()
    const id = this.nextId++
    const task = Promise.withResolvers<unknown>()
    this.pending.set(id, task)
    worker.postMessage({ ...req, id })
    return task.promise as Promise<T>
  }

  /** StoreUnavailableError once stopped, or while still starting after `waitMs`. */
  async ready (waitMs: number): Promise<void> {
    // `up` stays resolved when a thread that started dies later: its death is told by `dead`.
    if (this.dead !== undefined) throw new StoreUnavailableError('the database writer stopped', { cause: this.dead })
    this.start()
    const late = once(AbortSignal.timeout(waitMs), 'abort').then(() => {
      throw new StoreUnavailableError(`the database writer is still starting after ${waitMs} ms`)
    })
    await Promise.race([this.up.promise, late])
  }

  private settle (res: WriterResponse): void {
    if ('ready' in res) return this.up.resolve()
    const p = this.pending.get(res.id)
    if (p === undefined) return
    this.pending.delete(res.id)
    if ('gone' in res) p.reject(this.onGone(res.gone))
    else if (res.ok) p.resolve(res.result)
    else if (res.unavailable) p.reject(new StoreUnavailableError(`the database refused the write (${res.code ?? 'error'})`))
    else p.reject(Object.assign(new Error(res.message), { code: res.code }))
  }

  private fail (err: Error): void {
    this.dead ??= err
    this.up.reject(new StoreUnavailableError('the database writer stopped', { cause: err }))
    for (const p of this.pending.values()) p.reject(new StoreUnavailableError('the database writer stopped', { cause: err }))
    this.pending.clear()
  }

  async close (): Promise<void> {
    this.closed = true
    const worker = this.worker
    if (worker === undefined || this.dead !== undefined) return
    worker.postMessage({ op: 'close' })
    await new Promise(resolve => worker.once('exit', resolve))
  }
}
