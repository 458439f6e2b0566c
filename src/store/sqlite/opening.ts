import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { StoreOpeningError } from '../../errors.js'
import type { BackgroundWriter, GoneNotices, Opening, Store } from '../store.js'
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

type OpenedSqlite = Store & BackgroundWriter & GoneNotices

const isCheckResponse = (message: unknown): message is CheckResponse =>
  typeof message === 'object' && message !== null && typeof (message as { passed?: unknown }).passed === 'boolean'

/**
 * `passed` resolves when the file passed; rejects with MalformedStoreError, why it could not be
 * checked, or StoreOpeningError once stopped. `stop` kills the check at once, wherever it is.
 */
function checkInProcess (path: string) {
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

/** What answers StoreOpeningError until the store is open, then is the store's own. */
const FORWARDED = ['createPet', 'createPetIdempotent', 'getPet', 'listPets', 'purgeIdempotencyKeys', 'createApiKey', 'findApiKeyByHash',
  'listApiKeys', 'revokeApiKey', 'touchApiKeys', 'countApiKeys', 'getOrCreateSetting', 'ping'] as const satisfies Array<keyof OpenedSqlite>

/**
 * The store a start serves with while the file at `path` is checked: each member answers
 * StoreOpeningError until the check has passed and `open` has made the store, then is that store's.
 * Closures, not `this`: a wrapper of the store made with Object.create (tracing's) calls the members
 * with itself as `this`.
 */
export function openingStore (path: string, open: () => Promise<OpenedSqlite>): OpenedSqlite & Opening {
  const check = checkInProcess(path)
  let store: OpenedSqlite | undefined
  let closing = false
  const opened = check.passed.then(async () => {
    // Not closed meanwhile: nothing is written into a store nobody wants.
    if (closing) throw new StoreOpeningError('the store was closed before it was opened')
    store = await open()
  })
  opened.catch(() => {}) // the start waits for it; nothing else may
  const now = (): OpenedSqlite => {
    if (store !== undefined) return store
    throw new StoreOpeningError()
  }
  /** Now when opened, else once it is (never if it is not). */
  const whenOpened = (fn: (store: OpenedSqlite) => void): void => {
    if (store !== undefined) fn(store)
    else opened.then(() => { fn(now()) }, () => {})
  }
  const forwarded = Object.fromEntries(FORWARDED.map((name) => [name, async (...args: unknown[]) => {
    const target = now()
    return await (target[name] as (...args: unknown[]) => Promise<unknown>).apply(target, args)
  }])) as Pick<OpenedSqlite, typeof FORWARDED[number]>
  return {
    ...forwarded,
    kind: 'sqlite',
    opened,
    pageIsFinal: (afterId, lastId) => now().pageIsFinal(afterId, lastId),
    startWriter: () => { whenOpened((store) => { store.startWriter() }) },
    onGone: (listener) => { whenOpened((store) => { store.onGone(listener) }) },
    /** During the check: kills it (a shutdown never waits for it). */
    close: async () => {
      closing = true
      check.stop()
      // A store that did not open has nothing to close.
      await opened.then(async () => { await store?.close() }, () => {})
    }
  }
}
