import type { StoreConfig } from './options.js'
import type { SynchronousLevel } from './sqlite/connection.js'
import type { Store } from './store.js'

export type { StoreConfig } from './options.js'
export type { Store } from './store.js'

// Each store's module is loaded only when DATABASE_URL names it.

export interface StoreOptions {
  /** FULL (the default) keeps the durability promise through power loss. */
  sqliteSynchronous?: SynchronousLevel
}

export async function openStore (config: StoreConfig): Promise<Store> {
  const db = config.database
  if (db.kind === 'sqlite') {
    const { SqliteStore } = await import('./sqlite/index.js')
    return await SqliteStore.open({ path: db.path, synchronous: 'FULL' })
  }
  const { PostgresStore } = await import('./postgres/index.js')
  return await PostgresStore.open({ ...config, url: db.url })
}

/**
 * A server start's store: on SQLite an existing file opens in the background, after quick_check has
 * passed in a process of its own (isOpening, sqlite/opening.ts); otherwise what openStore opens.
 */
export async function startStore (config: StoreConfig, { sqliteSynchronous = 'FULL' }: StoreOptions = {}): Promise<Store> {
  const db = config.database
  if (db.kind !== 'sqlite') return await openStore(config)
  const { SqliteStore } = await import('./sqlite/index.js')
  return await SqliteStore.start({ path: db.path, synchronous: sqliteSynchronous })
}

export async function migrateStore (config: StoreConfig): Promise<number[]> {
  const db = config.database
  if (db.kind === 'sqlite') {
    const { SqliteStore } = await import('./sqlite/index.js')
    return SqliteStore.migrate({ path: db.path, synchronous: 'FULL' })
  }
  const { PostgresStore } = await import('./postgres/index.js')
  return await PostgresStore.migrate({ ...config, url: db.url })
}
