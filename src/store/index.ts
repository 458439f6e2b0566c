import type { Config } from '../config.js'
import { SqliteStore } from './sqlite/index.js'
import type { Store } from './store.js'

export type { Store } from './store.js'

/** Opens the store DATABASE_URL names, applying pending migrations first. */
export async function openStore (config: Pick<Config, 'database' | 'sqliteSynchronous'>): Promise<Store> {
  const db = config.database
  if (db.kind === 'sqlite') return await SqliteStore.open({ path: db.path, synchronous: config.sqliteSynchronous })
  throw new Error('DATABASE_URL: PostgreSQL is not supported by this build yet')
}

/** Applies pending migrations without starting anything; returns the versions applied. */
export async function migrateStore (config: Pick<Config, 'database' | 'sqliteSynchronous'>): Promise<number[]> {
  const db = config.database
  if (db.kind === 'sqlite') return SqliteStore.migrate({ path: db.path, synchronous: config.sqliteSynchronous })
  throw new Error('DATABASE_URL: PostgreSQL is not supported by this build yet')
}
