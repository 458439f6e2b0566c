import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { StoreOpeningError } from '../../errors.js'
import type { NewPet, Pet } from '../../schemas/pets.js'
import type {
  ApiKeyGrant, ApiKeyRecord, BackgroundWriter, GoneNotices, IdempotencyKey, IdempotentCreateResult, ListPetsParams,
  NewApiKey, Opening, Store
} from '../store.js'
import { sqliteEntry } from './background-writer.js'
import { type CheckResponse, isMalformedError, MalformedStoreError } from './start-checks.js'

/*
 * A server start over an existing SQLite file: quick_check reads every page, which on a large store
 * takes longer than the rest of the start together. It runs in a process of its own (check-worker.ts)
 * while the server listens; the store is migrated and opened once the check has passed, and until
 * then this store answers StoreOpeningError. See docs/explanation/durability.md.
 * A process, not a thread: a thread inside SQLite cannot be stopped, and a process exits only once
 * its threads have; a shutdown during the check kills the checking process (it only reads).
 */

export type OpenedSqlite = Store & BackgroundWriter & GoneNotices

const isCheckResponse = (message: unknown): message is CheckResponse =>
  typeof message === 'object' && message !== null && typeof (message as { passed?: unknown }).passed === 'boolean'

/**
 * `passed` resolves when the file passed; rejects with MalformedStoreError, why it could not be
 * checked, or StoreOpeningError once stopped. `stop` kills the check at once, wherever it is.
 */
export function checkInProcess (path: string) {
  const { promise: passed, ...settle } = Promise.withResolvers<void>()
  const entry = sqliteEntry('check-worker')
  // Under tsx (the sources), the process loads tsx first.
  const execArgv = entry.pathname.endsWith('.ts') ? [`--import=${import.meta.resolve('tsx')}`] : []
  const child = fork(fileURLToPath(entry), [path], { execArgv, stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' })
  child.on('message', (res: unknown) => {
    if (!isCheckResponse(res)) return
    if (res.passed) return settle.resolve()
    if ('found' in res) return settle.reject(new MalformedStoreError(path, res.found))
    const err = Object.assign(new Error(res.error.message), { name: 'SqliteError', code: res.error.code })
    settle.reject(isMalformedError(err) ? new MalformedStoreError(path, err.message, err) : err)
  })
  child.once('error', (err) => settle.reject(err))
  // Without a message first: a process that could not run its check.
  child.once('exit', (code, signal) => settle.reject(new Error(`the SQLite check process of ${path} exited (${signal ?? `code ${String(code)}`}) without an answer`)))
  return {
    passed,
    stop: () => {
      settle.reject(new StoreOpeningError('the store was closed before it was opened'))
      child.kill('SIGKILL')
    }
  }
}

/**
 * The store a start serves with while its file is checked: each member answers StoreOpeningError
 * until `open` has made the store, then is that store's. `open` is told whether the store is still
 * wanted (not closed meanwhile) before it writes anything. What changes is held in one object that
 * the members mutate and never replace: a wrapper of the store made with Object.create (tracing's)
 * calls them with itself as `this`.
 */
export class OpeningSqliteStore implements OpenedSqlite, Opening {
  readonly kind = 'sqlite' as const
  readonly opened: Promise<void>
  private readonly state: { store?: OpenedSqlite, closing: boolean } = { closing: false }

  constructor (open: (wanted: () => boolean) => Promise<OpenedSqlite>, private readonly stop: () => void) {
    const state = this.state
    this.opened = open(() => !state.closing).then((store) => { state.store = store })
    this.opened.catch(() => {}) // the start waits for it; nothing else may
  }

  private now (): OpenedSqlite {
    if (this.state.store !== undefined) return this.state.store
    throw new StoreOpeningError()
  }

  pageIsFinal (afterId: bigint | null, lastId: bigint): boolean { return this.now().pageIsFinal(afterId, lastId) }

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

  /** Now when opened, else once it is (never if it is not). */
  private whenOpened (fn: (store: OpenedSqlite) => void): void {
    const state = this.state
    if (state.store !== undefined) fn(state.store)
    else this.opened.then(() => { if (state.store !== undefined) fn(state.store) }, () => {})
  }

  startWriter (): void { this.whenOpened((store) => { store.startWriter() }) }
  onGone (listener: Parameters<GoneNotices['onGone']>[0]): void { this.whenOpened((store) => { store.onGone(listener) }) }

  /** During the check: kills it (a shutdown never waits for it). */
  async close (): Promise<void> {
    this.state.closing = true
    this.stop()
    // A store that did not open has nothing to close.
    await this.opened.then(async () => { await this.state.store?.close() }, () => {})
  }
}
