import { randomInt } from 'node:crypto'
import { closeSync, openSync, type Stats, statSync } from 'node:fs'
import type Database from 'better-sqlite3'
import { OutcomeUnknownError, StoreGoneError, StoreUnavailableError } from '../../errors.js'
import type { Pet } from '../../schemas/pets.js'
import type { CreateItem, CreateOutcome } from '../creates.js'
import { type KeysAndSettingsSql, SharedRepositories } from '../repositories.js'
import { KEY_COLUMNS, KEY_GRANT_COLUMNS, type KeyGrantRow, type KeyRow, pageAfter, type PetRow, toPet } from '../rows.js'
import type { BackgroundWriter, GoneNotices, ListPetsParams, Store } from '../store.js'
import { WorkerWriter } from './background-writer.js'
import { BUSY_TIMEOUT_MS, isUnavailableError, openSqlite, setSynchronous, type SynchronousLevel } from './connection.js'
import { migrateSqlite } from './migrations.js'
import { openingStore } from './opening.js'
import { isMalformedError, MalformedStoreError, quickCheck, refuseForeignStore, refuseNewWhereDataWas, StoreMissingError, writeMarker } from './start-checks.js'
import { type Gone, isNew, StoreFile } from './store-file.js'
import { WalFlush } from './wal-flush.js'
import { type BackgroundWrite, prepareWrites, type SqliteWrites } from './writes.js'

// How long a readiness check waits for a writer thread that is still booting.
const WRITER_READY_WAIT_MS = 2000

export interface SqliteStoreOptions {
  path: string
  synchronous: SynchronousLevel
}

/** See GroupCommitOptions.minIntervalMs. */
const FLUSH_INTERVAL_MS = 5
/** Below a busy client pool, so one batch flushes while the next is received. */
const FULL_BATCH = 32
/** About SQLite's default autocheckpoint size. */
const CHECKPOINT_EVERY_COMMITS = 200
const BUSY_RETRY_MS = 2

/**
 * Reads and the creates' commits run on the event loop; each commit's flush runs on libuv's thread
 * pool (wal-flush.ts) and a batch's pets stay hidden from reads until it completes, so nothing is
 * shown that a power loss could take back. Checkpoints and fire-and-forget writes run on a
 * background thread (writer-worker.ts).
 */
export class SqliteStore extends SharedRepositories implements Store, BackgroundWriter, GoneNotices {
  readonly kind = 'sqlite' as const
  private readonly writes: SqliteWrites
  private readonly stmts
  private hidden: { from: bigint, to: bigint } | undefined
  private commitsSinceCheckpoint = 0
  private checkpointing = false
  /** One object, never replaced: a wrapper of the store (tracing's) shares it. */
  private readonly lost: { gone?: StoreGoneError, line?: string, rescue?: Promise<void> } = {}
  private readonly goneListeners: Array<Parameters<GoneNotices['onGone']>[0]> = []
  private readonly writer: WorkerWriter | undefined

  protected readonly sql: KeysAndSettingsSql = {
    insertKey: async (k) => await this.writeNow(() => this.stmts.insertKey.get(k.name, k.hash, k.scopes, k.createdAt.toISOString(), k.expiresAt?.toISOString() ?? null) as KeyRow),
    keyByHash: async (hash) => this.guard(() => this.stmts.keyByHash.get(hash) as KeyGrantRow | undefined),
    listKeys: async () => this.guard(() => this.stmts.listKeys.all() as KeyRow[]),
    revokeKey: async (id, at) => (await this.writeNow(() => this.stmts.revokeKey.run({ at: at.toISOString(), id }))).changes,
    touchKeys: async (usedAt) => {
      const entries = [...usedAt].map(([id, at]): [number, string] => [id, at.toISOString()])
      await this.inBackground({ op: 'touchApiKeys', entries })
    },
    countKeys: async () => this.guard(() => this.stmts.countKeys.get() as bigint),
    insertSettingIfAbsent: async (name, value) => { await this.writeNow(() => this.stmts.insertSetting.run(name, value)) },
    setting: async (name) => this.guard(() => this.stmts.getSetting.get(name) as string)
  }

  private constructor (
    private readonly db: Database.Database,
    opts: SqliteStoreOptions,
    private readonly file: StoreFile | undefined,
    private readonly wal: WalFlush | undefined
  ) {
    super(wal === undefined ? undefined : { minIntervalMs: FLUSH_INTERVAL_MS, fullBatch: FULL_BATCH })
    this.writer = file === undefined
      ? undefined
      : new WorkerWriter({ ...opts, file: { identity: file.identity, idAtOpen: file.idAtOpen } }, (found) => this.becomeGone(found))
    this.writes = prepareWrites(db)
    this.stmts = {
      getPet: db.prepare('SELECT id, name, category_id, status FROM pets WHERE id = ?'),
      // The NOT BETWEEN skips the hidden batch (1 and 0, an empty range, when there is none).
      listAll: db.prepare('SELECT id, name, category_id, status FROM pets WHERE id > ? AND id NOT BETWEEN ? AND ? ORDER BY id LIMIT ?'),
      listByStatus: db.prepare('SELECT id, name, category_id, status FROM pets WHERE status = ? AND id > ? AND id NOT BETWEEN ? AND ? ORDER BY id LIMIT ?'),
      insertKey: db.prepare(`INSERT INTO api_keys (name, key_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?) RETURNING ${KEY_COLUMNS}`),
      keyByHash: db.prepare(`SELECT ${KEY_GRANT_COLUMNS} FROM api_keys WHERE key_hash = ?`),
      listKeys: db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`),
      // Times are ISO 8601 UTC strings of one length: their order is the text order.
      revokeKey: db.prepare('UPDATE api_keys SET revoked_at = min(COALESCE(revoked_at, @at), @at) WHERE id = @id'),
      countKeys: db.prepare('SELECT count(*) FROM api_keys').pluck(),
      insertSetting: db.prepare('INSERT OR IGNORE INTO settings (name, value) VALUES (?, ?)'),
      getSetting: db.prepare('SELECT value FROM settings WHERE name = ?').pluck(),
      ping: db.prepare('SELECT 1')
    }
  }

  /** A failure that says the file is not a sound database makes the store gone. */
  private guard<T> (fn: () => T): T {
    try {
      return fn()
    } catch (err) {
      if (isMalformedError(err)) this.becomeGone({ reason: 'malformed', what: `${this.file?.identity.path ?? 'the database'} reads as malformed (${String((err as { code?: unknown }).code)}: ${(err as Error).message})` }, err)
      if (isUnavailableError(err)) throw new StoreUnavailableError('the database is unavailable', { cause: err })
      throw err
    }
  }

  /** A write nobody waits for: on the background thread when there is one (a file), else here. */
  private async inBackground<T> (write: BackgroundWrite): Promise<T> {
    if (this.writer === undefined) return this.guard(() => this.writes.background(write) as T)
    if (this.lost.gone !== undefined) throw this.lost.gone
    return await this.writer.run<T>(write)
  }

  onGone (listener: Parameters<GoneNotices['onGone']>[0]): void {
    this.goneListeners.push(listener)
    if (this.lost.gone !== undefined && this.lost.line !== undefined) listener(this.lost.line, this.lost.gone.reason, 'error')
  }

  private checkFile (): StoreGoneError | undefined {
    if (this.lost.gone !== undefined || this.file === undefined) return this.lost.gone
    let found: Gone | undefined
    try {
      found = this.file.check()
    } catch (err) {
      found = { reason: 'removed', what: `${this.file.identity.path} cannot be checked (${String((err as { code?: unknown }).code ?? (err as Error).message)})` }
    }
    return found === undefined ? undefined : this.becomeGone(found)
  }

  /**
   * No write is taken from now on, and this store's WAL and -shm are moved away from the path so that
   * no later start replays this log into the file that is there now.
   */
  private becomeGone (found: Gone, cause?: unknown): StoreGoneError {
    if (this.lost.gone !== undefined) return this.lost.gone
    this.lost.gone = new StoreGoneError(found.reason, { cause })
    const path = this.file?.identity.path ?? 'the database'
    const stamp = new Date().toISOString().replace(/[:.]/g, '-')
    let wal = ''
    if (found.reason !== 'malformed') {
      try {
        const aside = this.file?.setAside(stamp)
        if (aside !== undefined) wal = `Its write-ahead log was moved to ${aside}, so that no later start replays it into another file. `
      } catch (err) {
        wal = `Its write-ahead log could not be moved away (${String((err as { code?: unknown }).code ?? (err as Error).message)}): move ${path}-wal and ${path}-shm away before the next start. `
      }
    }
    // Removed or replaced, the file still open holds everything this store acknowledged.
    const copy = found.reason === 'removed' || found.reason === 'replaced' ? `${path}.gone-${stamp}` : undefined
    const todo = found.reason === 'malformed'
      ? `Stop this instance, check the file with: sqlite3 ${path} 'PRAGMA integrity_check', restore it from a backup, and start again.`
      : `Stop this instance, put the right database file back at ${path} (or restore a backup), and start again.`
    this.lost.line = `SQLite store gone: ${found.what}. This instance acknowledges no create from now on (503 store_gone) and /readyz answers 503; reads go on from the file it has open. ` +
      (copy !== undefined ? `A copy of the store as this instance has it (every create it acknowledged) is being written to ${copy}. ` : '') +
      wal + todo
    for (const listener of this.goneListeners) listener(this.lost.line, found.reason, 'error')
    if (copy !== undefined) this.lost.rescue = this.copyTo(copy, found.reason)
    return this.lost.gone
  }

  /** Through SQLite's online backup: nothing is written into the file at the path. */
  private async copyTo (copy: string, reason: StoreGoneError['reason']): Promise<void> {
    const tell = (line: string, level: 'error' | 'info') => { for (const listener of this.goneListeners) listener(line, reason, level) }
    try {
      closeSync(openSync(copy, 'wx', 0o600))
      await this.db.backup(copy)
      tell(`SQLite store copy written: ${copy} holds the store as this instance had it when its file was ${reason}. To keep what it acknowledged, stop this instance and put that file in place of the database (it is a complete database, without -wal or -shm).`, 'info')
    } catch (err) {
      tell(`SQLite store copy failed: ${copy} (${String((err as { code?: unknown }).code ?? (err as Error).message)}); the creates this instance acknowledged since the last backup are only in the file it has open: do not stop it before copying them (petstore export cannot reach that file).`, 'error')
    }
  }

  /** A flush that fails leaves the batch hidden and the store refusing writes until restarted. */
  protected async commitCreates (items: CreateItem[]): Promise<CreateOutcome[]> {
    const stopped = this.writer?.stopped()
    // A thread that stopped may have found the file gone.
    if (stopped !== undefined) throw this.lost.gone ?? this.flushFailure() ?? this.checkFile() ?? stopped
    const outcomes = await this.writeNow(() => {
      const outcomes = this.writes.createPets(items)
      // Hidden in the same synchronous step as the commit, so nothing reads in between; the new ids are one ascending run.
      const ids = this.wal === undefined ? [] : outcomes.filter((o): o is bigint => typeof o === 'bigint')
      if (ids.length > 0) this.hidden = { from: ids[0]!, to: ids.at(-1)! }
      return outcomes
    })
    this.hidden = undefined
    return outcomes
  }

  /**
   * Resolves once the commit is on the disk and the file at the path is still this store's. Only pets
   * are hidden meanwhile (commitCreates): nothing reads a key or setting before the caller has its answer.
   */
  private async writeNow<T> (write: () => T): Promise<T> {
    const failed = this.lost.gone ?? this.flushFailure()
    if (failed !== undefined) throw failed
    const result = await this.whenWriteLockFree(write)
    if (++this.commitsSinceCheckpoint >= CHECKPOINT_EVERY_COMMITS) this.checkpoint()
    try {
      await this.wal?.flush()
    } catch (err) {
      // Committed to the WAL but not known to be on the disk: a restart may or may not recover it.
      throw new OutcomeUnknownError('the database could not flush its write-ahead log to disk; restart the service', { cause: err })
    }
    const gone = this.checkFile()
    if (gone !== undefined) throw gone
    return result
  }

  /** No busy handler on this connection (SQLite's would sleep on the event loop): retry here instead. */
  private async whenWriteLockFree<T> (write: () => T): Promise<T> {
    const deadline = Date.now() + BUSY_TIMEOUT_MS
    for (;;) {
      try {
        return write()
      } catch (err) {
        if ((err as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) return this.guard(() => { throw err })
      }
      await new Promise(resolve => setTimeout(resolve, BUSY_RETRY_MS))
    }
  }

  private flushFailure (): StoreUnavailableError | undefined {
    const failed = this.wal?.error
    return failed === undefined ? undefined : new StoreUnavailableError('the database could not flush its write-ahead log to disk; restart the service', { cause: failed })
  }

  private checkpoint (): void {
    if (this.writer === undefined || this.checkpointing || this.lost.gone !== undefined) return
    this.checkpointing = true
    this.commitsSinceCheckpoint = 0
    this.writer.run({ op: 'checkpoint' }).catch(() => {}).finally(() => { this.checkpointing = false })
  }

  /**
   * The background thread starts at startWriter() or its first task, not here: its boot would delay
   * the first answer. This connection commits at NORMAL (OFF at OFF); FULL and EXTRA flush each commit
   * through WalFlush.
   */
  static async open (opts: SqliteStoreOptions): Promise<SqliteStore> {
    return await SqliteStore.migrated(opts, openChecked(opts))
  }

  /**
   * A server start: over an existing file the store is returned at once and opens in the background
   * (opening.ts): quick_check in a process of its own, then, once it passed, the file is opened here,
   * migrated and served. A new file (nothing to check) and `:memory:` open as open() does.
   */
  static async start (opts: SqliteStoreOptions): Promise<Store> {
    if (opts.path === ':memory:' || isNew(opts.path)) return await SqliteStore.open(opts)
    const checked = statSync(opts.path)
    refuseForeignStore(opts.path, 'start')
    return openingStore(opts.path, async () => await SqliteStore.migrated(opts, openAsChecked(opts.path, opts.synchronous, checked)))
  }

  /** Migrates `db` and makes the store of it; `db` is closed if that fails. */
  private static async migrated (opts: SqliteStoreOptions, db: Database.Database): Promise<SqliteStore> {
    let wal: WalFlush | undefined
    let file: StoreFile | undefined
    try {
      migrateSqlite(db)
      if (opts.path === ':memory:') return new SqliteStore(db, opts, undefined, undefined)
      const storeId = ensureStoreId(db)
      writeMarker(opts.path, storeId)
      file = StoreFile.open(opts.path, storeId, true)
      db.pragma('wal_autocheckpoint = 0')
      // See whenWriteLockFree; in WAL mode a read is not kept out by a writer or a checkpoint.
      db.pragma('busy_timeout = 0')
      setSynchronous(db, opts.synchronous === 'OFF' ? 'OFF' : 'NORMAL')
      if (opts.synchronous === 'FULL' || opts.synchronous === 'EXTRA') wal = await WalFlush.open(opts.path)
    } catch (err) {
      file?.close()
      db.close()
      throw err
    }
    return new SqliteStore(db, opts, file, wal)
  }

  static migrate (opts: SqliteStoreOptions): number[] {
    const db = openChecked(opts)
    try {
      const versions = migrateSqlite(db)
      if (opts.path !== ':memory:') writeMarker(opts.path, ensureStoreId(db))
      return versions
    } finally {
      db.close()
    }
  }

  async purgeIdempotencyKeys (before: Date): Promise<number> {
    return await this.inBackground({ op: 'purgeIdempotencyKeys', beforeMs: before.getTime() })
  }

  // The ids of a batch committed but not yet flushed are hidden: a read shows them only once durable.
  async getPet (id: bigint): Promise<Pet | undefined> {
    const h = this.hidden
    if (h !== undefined && id >= h.from && id <= h.to) return undefined
    const row = this.guard(() => this.stmts.getPet.get(id) as PetRow | undefined)
    return row === undefined ? undefined : toPet(row)
  }

  async listPets (params: ListPetsParams): Promise<Pet[]> {
    const { limit, status } = params
    const after = pageAfter(params)
    const h = this.hidden
    const [from, to] = h === undefined ? [1n, 0n] : [h.from, h.to]
    const rows = this.guard(() => (status === undefined
      ? this.stmts.listAll.all(after, from, to, limit)
      : this.stmts.listByStatus.all(status, after, from, to, limit)) as PetRow[])
    return rows.map(toPet)
  }

  // Asked right after listPets returns (services/pet-reads.ts): `hidden` changes only in the group
  // commit's own callbacks (a commit on its timer, a flush on the thread pool's completion), never
  // inside the microtasks of the request that read, so the answer is about the rows that were read.
  pageIsFinal (afterId: bigint | null, lastId: bigint): boolean {
    const h = this.hidden
    return h === undefined || h.to <= (afterId ?? 0n) || h.from > lastId
  }

  startWriter (): void {
    this.writer?.start()
  }

  async ping (): Promise<void> {
    this.guard(() => this.stmts.ping.get())
    // Ready means writes can be taken too.
    const failed = this.checkFile() ?? this.flushFailure()
    if (failed !== undefined) throw failed
    await this.writer?.ready(WRITER_READY_WAIT_MS)
  }

  async close (): Promise<void> {
    await this.creates.drain()
    await this.lost.rescue
    await this.writer?.close()
    await this.wal?.close()
    // The last close checkpoints the WAL into the file at the path; once that file is not this
    // store's, the connection is left open (better-sqlite3 cannot close without checkpointing).
    const gone = this.checkFile() !== undefined
    this.file?.close()
    if (!gone) this.db.close()
  }
}

/** The file that passed the check in its thread: refused if another one (or none) is at the path now. */
function openAsChecked (path: string, synchronous: SynchronousLevel, checked: Stats): Database.Database {
  const same = (): boolean => {
    const now = statSync(path, { throwIfNoEntry: false })
    return now !== undefined && now.dev === checked.dev && now.ino === checked.ino
  }
  if (same()) {
    const db = openSqlite(path, synchronous, { mustExist: true })
    if (same()) return db
    db.close()
  }
  throw new StoreMissingError(`the SQLite database ${path} was removed or replaced while it was checked at start; it is not served. ` +
    'Put the database back (restore a backup) and start again')
}

/** Refused where a store was, or where another store is; an existing file must pass quick_check. */
function openChecked ({ path, synchronous }: SqliteStoreOptions): Database.Database {
  const fresh = path !== ':memory:' && isNew(path)
  if (fresh) refuseNewWhereDataWas(path)
  else if (path !== ':memory:') refuseForeignStore(path, 'command')
  let db: Database.Database
  try {
    db = openSqlite(path, synchronous)
  } catch (err) {
    if (isMalformedError(err)) throw new MalformedStoreError(path, (err as Error).message, err)
    throw err
  }
  const problem = fresh ? undefined : quickCheck(db)
  if (problem !== undefined) {
    db.close()
    throw new MalformedStoreError(path, problem.found, problem.cause)
  }
  return db
}

/** Kept in the header's application_id (see store-file.ts); backups carry it. */
function ensureStoreId (db: Database.Database): number {
  const id = Number(db.pragma('application_id', { simple: true }))
  if (id !== 0) return id
  // 0, SQLite's default application_id, is no store's.
  const made = randomInt(1, 0x7fffffff)
  db.pragma(`application_id = ${made}`)
  return made
}
