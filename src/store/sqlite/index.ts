import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'
import { StoreUnavailableError } from '../../errors.js'
import type { NewPet, Pet } from '../../schemas/pets.js'
import { type CreateOutcome, PetCreates } from '../creates.js'
import { KEY_COLUMNS, KEY_GRANT_COLUMNS, type KeyGrantRow, type KeyRow, pageAfter, type PetRow, toApiKey, toKeyGrant, toPet } from '../rows.js'
import { ALL_SCOPES, scopesText } from '../../schemas/scopes.js'
import type { ApiKeyGrant, ApiKeyRecord, IdempotencyKey, IdempotentCreateResult, ListPetsParams, NewApiKey, PetReadsNow, Store } from '../store.js'
import { isUnavailableError, openSqlite, type SynchronousLevel } from './connection.js'
import { migrateSqlite } from './migrations.js'
import type { WriterOp, WriterResponse } from './writer-worker.js'
import { prepareWrites } from './writes.js'

/** Runs a synchronous better-sqlite3 call, turning "cannot work now" failures into StoreUnavailableError. */
function guard<T> (fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    if (isUnavailableError(err)) throw new StoreUnavailableError('the database is unavailable', { cause: err })
    throw err
  }
}

// How long a readiness check waits for a writer thread that is still booting before answering 503
// (a boot takes far less; this long only on a machine that is overloaded).
const WRITER_READY_WAIT_MS = 2000

// Defined by the production bundle (scripts/bundle.mjs): the compiled writer entry, relative to the bundle's chunk.
declare const PETSTORE_WRITER_ENTRY: string | undefined

/**
 * The writer thread's entry: next to this module (dist/store/sqlite/ as compiled; src/ under tsx, in
 * tests and `npm run dev`, where the thread registers tsx first), or, from the bundle, the compiled file.
 */
function writerEntry (): URL {
  if (typeof PETSTORE_WRITER_ENTRY === 'string') return new URL(PETSTORE_WRITER_ENTRY, import.meta.url)
  return new URL(`./writer-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url)
}

/**
 * Sends write batches to the writer thread and matches the answers. The thread is started by
 * start() or by the first write, whichever comes first. Requests sent while it is still starting wait
 * in its message port; if it cannot start, they fail as unavailable (503).
 */
class WorkerWriter {
  private worker: Worker | undefined
  private nextId = 1
  private readonly pending = new Map<number, { resolve: (v: unknown) => void, reject: (e: unknown) => void }>()
  private dead: Error | undefined
  private closed = false
  private up: { promise: Promise<void>, resolve: () => void, reject: (e: unknown) => void } | undefined

  constructor (private readonly path: string, private readonly synchronous: SynchronousLevel) {}

  start (): Worker {
    if (this.worker !== undefined) return this.worker
    const entry = writerEntry()
    const workerData = { path: this.path, synchronous: this.synchronous }
    const worker = entry.pathname.endsWith('.ts')
      ? new Worker(`import('tsx/esm/api').then(m => { m.register(); return import(${JSON.stringify(entry.href)}) })`, { eval: true, workerData })
      : new Worker(entry, { workerData })
    let settle!: Pick<NonNullable<typeof this.up>, 'resolve' | 'reject'>
    const promise = new Promise<void>((resolve, reject) => { settle = { resolve, reject } })
    promise.catch(() => {}) // seen by whoever waits for it; nobody may be waiting
    this.up = { promise, ...settle }
    worker.on('message', (res: WriterResponse) => this.settle(res))
    worker.on('error', (err) => this.fail(err))
    worker.on('exit', (code) => this.fail(new Error(`SQLite writer thread exited with code ${code}`)))
    this.worker = worker
    return worker
  }

  run<T> (req: WriterOp): Promise<T> {
    if (this.dead !== undefined) return Promise.reject(new StoreUnavailableError('the database writer stopped', { cause: this.dead }))
    if (this.closed) return Promise.reject(new StoreUnavailableError('the database writer stopped'))
    const worker = this.start()
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
      worker.postMessage({ ...req, id })
    })
  }

  /**
   * Resolves once the thread is up (starting it if need be); StoreUnavailableError once it has
   * stopped or could not start, or while it is still starting after `waitMs`.
   */
  async ready (waitMs: number): Promise<void> {
    if (this.dead !== undefined) throw new StoreUnavailableError('the database writer stopped', { cause: this.dead })
    this.start()
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((resolve, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError(`the database writer is still starting after ${waitMs} ms`)), waitMs)
    })
    try {
      await Promise.race([this.up!.promise, late])
    } finally {
      clearTimeout(timer)
    }
  }

  private settle (res: WriterResponse): void {
    if ('ready' in res) {
      this.up?.resolve()
      return
    }
    const p = this.pending.get(res.id)
    if (p === undefined) return
    this.pending.delete(res.id)
    if (res.ok) p.resolve(res.result)
    else if (res.unavailable) p.reject(new StoreUnavailableError(`the database refused the write (${res.code ?? 'error'})`))
    else p.reject(Object.assign(new Error(res.message), { code: res.code }))
  }

  private fail (err: Error): void {
    this.dead ??= err
    this.up?.reject(new StoreUnavailableError('the database writer stopped', { cause: err }))
    for (const p of this.pending.values()) p.reject(new StoreUnavailableError('the database writer stopped', { cause: err }))
    this.pending.clear()
  }

  async close (): Promise<void> {
    this.closed = true
    const worker = this.worker
    if (worker === undefined || this.dead !== undefined) return
    const exited = new Promise(resolve => worker.once('exit', resolve))
    worker.postMessage({ op: 'close' })
    await exited
  }
}

export interface SqliteStoreOptions {
  path: string
  synchronous: SynchronousLevel
}

/** The embedded store: reads on the event loop (microseconds), writes group-committed on a writer thread. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const
  private readonly creates: PetCreates
  private readonly stmts
  private constructor (
    private readonly db: Database.Database,
    private readonly writer: WorkerWriter | undefined
  ) {
    const inline = writer === undefined ? prepareWrites(db) : undefined
    this.creates = new PetCreates(async (items) =>
      writer !== undefined
        ? await writer.run<CreateOutcome[]>({ op: 'createPets', items })
        : guard(() => inline!.createPets(items)))
    this.purge = writer !== undefined
      ? async (beforeMs) => await writer.run<number>({ op: 'purgeIdempotencyKeys', beforeMs })
      : async (beforeMs) => guard(() => inline!.purgeIdempotencyKeys(beforeMs))
    this.touch = writer !== undefined
      ? async (entries) => { await writer.run({ op: 'touchApiKeys', entries }) }
      : async (entries) => { guard(() => inline!.touchApiKeys(entries)) }
    this.stmts = {
      getPet: db.prepare('SELECT id, name, category_id, status FROM pets WHERE id = ?'),
      listAll: db.prepare('SELECT id, name, category_id, status FROM pets WHERE id > ? ORDER BY id LIMIT ?'),
      listByStatus: db.prepare('SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?'),
      insertKey: db.prepare(`INSERT INTO api_keys (name, key_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?) RETURNING ${KEY_COLUMNS}`),
      keyByHash: db.prepare(`SELECT ${KEY_GRANT_COLUMNS} FROM api_keys WHERE key_hash = ?`),
      listKeys: db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`),
      // Times are ISO 8601 UTC strings of one length: their order is the text order.
      revokeKey: db.prepare('UPDATE api_keys SET revoked_at = min(COALESCE(revoked_at, @at), @at) WHERE id = @id'),
      countKeys: db.prepare('SELECT count(*) AS n FROM api_keys'),
      insertSetting: db.prepare('INSERT OR IGNORE INTO settings (name, value) VALUES (?, ?)'),
      getSetting: db.prepare('SELECT value FROM settings WHERE name = ?'),
      ping: db.prepare('SELECT 1')
    }
  }

  private readonly touch: (entries: Array<[number, string]>) => Promise<void>
  private readonly purge: (beforeMs: number) => Promise<number>

  /**
   * Opens (creating if needed) and migrates the database. The writer thread is not started here: it
   * boot is CPU a server start would pay before its first answer when its threads share a core. It starts at startWriter() (the server calls it once listening) or at the first
   * write; writes sent meanwhile wait in its message port. The read connection has already applied
   * the migrations and proved the file writable.
   */
  static async open (opts: SqliteStoreOptions): Promise<SqliteStore> {
    const db = openSqlite(opts.path, opts.synchronous)
    try {
      migrateSqlite(db)
    } catch (err) {
      db.close()
      throw err
    }
    // :memory: is private to its connection, so it cannot have a writer thread.
    return new SqliteStore(db, opts.path === ':memory:' ? undefined : new WorkerWriter(opts.path, opts.synchronous))
  }

  /** Applies pending migrations and returns their versions (used by `petstore migrate`). */
  static migrate (opts: SqliteStoreOptions): number[] {
    const db = openSqlite(opts.path, opts.synchronous)
    try {
      return migrateSqlite(db)
    } finally {
      db.close()
    }
  }

  async createPet (pet: NewPet): Promise<Pet> {
    return await this.creates.create(pet)
  }

  async createPetIdempotent (pet: NewPet, idem: IdempotencyKey): Promise<IdempotentCreateResult> {
    return await this.creates.createIdempotent(pet, idem)
  }

  async purgeIdempotencyKeys (before: Date): Promise<number> {
    return await this.purge(before.getTime())
  }

  readonly readsNow: PetReadsNow = {
    getPet: (id) => {
      const row = guard(() => this.stmts.getPet.get(id) as PetRow | undefined)
      return row === undefined ? undefined : toPet(row)
    },
    listPets: (params) => {
      const { limit, status } = params
      const after = pageAfter(params)
      const rows = guard(() => (status === undefined
        ? this.stmts.listAll.all(after, limit)
        : this.stmts.listByStatus.all(status, after, limit)) as PetRow[])
      return rows.map(toPet)
    }
  }

  async getPet (id: bigint): Promise<Pet | undefined> {
    return this.readsNow.getPet(id)
  }

  async listPets (params: ListPetsParams): Promise<Pet[]> {
    return this.readsNow.listPets(params)
  }

  async createApiKey (key: NewApiKey): Promise<ApiKeyRecord> {
    const values = [key.name, key.hash, scopesText(key.scopes ?? ALL_SCOPES), key.createdAt.toISOString(), key.expiresAt?.toISOString() ?? null]
    return toApiKey(guard(() => this.stmts.insertKey.get(...values) as KeyRow))
  }

  async findApiKeyByHash (hash: string): Promise<ApiKeyGrant | undefined> {
    const row = guard(() => this.stmts.keyByHash.get(hash) as KeyGrantRow | undefined)
    return row === undefined ? undefined : toKeyGrant(row)
  }

  async listApiKeys (): Promise<ApiKeyRecord[]> {
    return guard(() => this.stmts.listKeys.all() as KeyRow[]).map(toApiKey)
  }

  async revokeApiKey (id: number, at: Date): Promise<boolean> {
    return guard(() => this.stmts.revokeKey.run({ at: at.toISOString(), id })).changes > 0
  }

  async touchApiKeys (usedAt: Map<number, Date>): Promise<void> {
    if (usedAt.size === 0) return
    await this.touch([...usedAt].map(([id, at]) => [id, at.toISOString()]))
  }

  async countApiKeys (): Promise<number> {
    return Number((guard(() => this.stmts.countKeys.get()) as { n: bigint }).n)
  }

  async getOrCreateSetting (name: string, create: () => string): Promise<string> {
    return guard(() => {
      this.stmts.insertSetting.run(name, create())
      return (this.stmts.getSetting.get(name) as { value: string }).value
    })
  }

  startWriter (): void {
    this.writer?.start()
  }

  async ping (): Promise<void> {
    guard(() => this.stmts.ping.get())
    // Ready means writes can be taken too: the writer thread is up (waited for while it boots, right
    // after a start) and has not stopped.
    await this.writer?.ready(WRITER_READY_WAIT_MS)
  }

  async close (): Promise<void> {
    await this.creates.drain()
    await this.writer?.close()
    this.db.close()
  }
}
