import type { Config } from '../config.js'
import { PostgresStore } from './postgres/index.js'
import { SqliteStore } from './sqlite/index.js'
import type { Store } from './store.js'

export type { Store } from './store.js'

export type StoreConfig = Pick<Config, 'database' | 'sqliteSynchronous' | 'pgPoolMax' | 'pgStatementTimeoutMs' | 'pgConnectTimeoutMs' | 'pgPreparedStatements'>

function pgOptions (url: string, config: StoreConfig) {
  return { url, poolMax: config.pgPoolMax, statementTimeoutMs: config.pgStatementTimeoutMs, connectTimeoutMs: config.pgConnectTimeoutMs, preparedStatements: config.pgPreparedStatements }
}

/** Opens the store DATABASE_URL names, applying pending migrations first. */
export async function openStore (config: StoreConfig): Promise<Store> {
  const db = config.database
  if (db.kind === 'sqlite') return await SqliteStore.open({ path: db.path, synchronous: config.sqliteSynchronous })
  return await PostgresStore.open(pgOptions(db.url, config))
}

/** Applies pending migrations without starting anything; returns the versions applied. */
export async function migrateStore (config: StoreConfig): Promise<number[]> {
  const db = config.database
  if (db.kind === 'sqlite') return SqliteStore.migrate({ path: db.path, synchronous: config.sqliteSynchronous })
  return await PostgresStore.migrate(pgOptions(db.url, config))
}
