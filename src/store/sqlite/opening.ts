import type { Worker } from 'node:worker_threads'
import { StoreOpeningError } from '../../errors.js'
import type { NewPet, Pet } from '../../schemas/pets.js'
import type {
  ApiKeyGrant, ApiKeyRecord, BackgroundWriter, GoneNotices, IdempotencyKey, IdempotentCreateResult, ListPetsParams,
  NewApiKey, Opening, Store, SynchronousReads, SyncPetReads
} from '../store.js'
import { startThread } from './background-writer.js'
import { type CheckResponse, isMalformedError, MalformedStoreError } from './start-checks.js'

/*
 * A server start over an existing SQLite file: quick_check reads every page, which on a large store
 * takes longer than the rest of the start together. It runs on a thread of its own (check-worker.ts)
 * while the server listens; the store is migrated and opened once the check has passed, and until
 * then this store answers StoreOpeningError. See docs/explanation/durability.md.
 */

export type OpenedSqlite = Store & SynchronousReads & BackgroundWriter & GoneNotices

export interface CheckThread {
  /** Resolves when the file passed; rejects with MalformedStoreError, why it could not be checked, or StoreOpeningError once stopped. */
  readonly passed: Promise<void>
  /** Does not wait for the thread: a page read in progress is not interrupted, and the thread no longer keeps the process up. */
  stop: () => void
}

export function checkInThread (path: string): CheckThread {
  let settle!: { resolve: () => void, reject: (err: unknown) => void }
  const passed = new Promise<void>((resolve, reject) => { settle = { resolve, reject } })
  let worker: Worker
  try {
    worker = startThread('check-worker', { path })
  } catch (err) {
    settle.reject(err)
    return { passed, stop: () => {} }
  }
  worker.once('message', (res: CheckResponse) => {
    if (res.passed) return settle.resolve()
    if ('found' in res) return settle.reject(new MalformedStoreError(path, res.found))
    const err = Object.assign(new Error(res.error.message), { name: 'SqliteError', code: res.error.code })
    settle.reject(isMalformedError(err) ? new MalformedStoreError(path, err.message, err) : err)
  })
  worker.once('error', (err) => settle.reject(err))
  // Without a message first: a thread that could not run its check.
  worker.once('exit', (code) => settle.reject(new Error(`the SQLite check thread of ${path} exited with code ${code} without an answer`)))
  return {
    passed,
    stop: () => {
      settle.reject(new StoreOpeningError('the store was closed before it was opened'))
      worker.unref()
      void worker.terminate()
    }
  }
}

/**
 * The store a start serves with while its file is checked: each member answers StoreOpeningError
 * until `open` has made the store, then is that store's. `open` is told whether the store is still
 * wanted (not closed meanwhile) before it writes anything.
 */
export class OpeningSqliteStore implements OpenedSqlite, Opening {
  readonly kind = 'sqlite' as const
  readonly opened: Promise<void>
  private store: OpenedSqlite | undefined
  private closing = false
  private writerWanted = false
  private readonly goneListeners: Array<Parameters<GoneNotices['onGone']>[0]> = []

  constructor (open: (wanted: () => boolean) => Promise<OpenedSqlite>, private readonly stop: () => void) {
    this.opened = open(() => !this.closing).then((store) => {
      this.store = store
      for (const listener of this.goneListeners) store.onGone(listener)
      if (this.writerWanted) store.startWriter()
    })
    this.opened.catch(() => {}) // the start waits for it; nothing else may
  }

  private now (): OpenedSqlite {
    if (this.store !== undefined) return this.store
    throw new StoreOpeningError()
  }

  readonly syncReads: SyncPetReads = {
    getPet: (id) => this.now().syncReads.getPet(id),
    listPets: (params) => this.now().syncReads.listPets(params),
    pageIsFinal: (afterId, lastId) => this.now().syncReads.pageIsFinal(afterId, lastId)
  }

  async createPet (pet: NewPet): Promise<Pet> { return await this.now().createPet(pet) }
  async createPetIdempotent (pet: NewPet, idem: IdempotencyKey): Promise<IdempotentCreateResult> { return await this.now().createPetIdempotent(pet, idem) }
  async getPet (id: bigint): Promise<Pet | undefined> { return await this.now().getPet(id) }
  async listPets (params: ListPetsParams): Promise<Pet[]> { return await this.now().listPets(params) }
  async purgeIdempotencyKeys (before: Date): Promise<number> { return await this.now().purgeIdempotencyKeys(before) }
  async createApiKey (key: NewApiKey): Promise<ApiKeyRecord> { return await this.now().createApiKey(key) }
  async findApiKeyByHash (hash: string): Promise<ApiKeyGrant | undefined> { return await this.now().findApiKeyByHash(hash) }
  async listApiKeys (): Promise<ApiKeyRecord[]> { return await this.now().listApiKeys() }
  async revokeApiKey (id: number, at: Date): Promise<boolean> { return await this.now().revokeApiKey(id, at) }
  async touchApiKeys (usedAt: Map<number, Date>): Promise<void> { await this.now().touchApiKeys(usedAt) }
  async countApiKeys (): Promise<number> { return await this.now().countApiKeys() }
  async getOrCreateSetting (name: string, create: () => string): Promise<string> { return await this.now().getOrCreateSetting(name, create) }
  async ping (): Promise<void> { await this.now().ping() }

  startWriter (): void {
    if (this.store !== undefined) this.store.startWriter()
    else this.writerWanted = true
  }

  onGone (listener: Parameters<GoneNotices['onGone']>[0]): void {
    if (this.store !== undefined) this.store.onGone(listener)
    else this.goneListeners.push(listener)
  }

  /** During the check: stops it without waiting for it (a shutdown never waits for a page read). */
  async close (): Promise<void> {
    this.closing = true
    this.stop()
    try {
      await this.opened
    } catch {
      return
    }
    await this.store?.close()
  }
}
