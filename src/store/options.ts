import type { Config } from '../config/index.js'
import type { PgConnectionOptions } from './postgres/connection.js'

/** The settings that choose and tune a store. */
export type StoreConfig = Pick<Config, 'database' | 'pgPoolMax' | 'pgStatementTimeoutMs' | 'pgConnectTimeoutMs' | 'pgPreparedStatements'>

/** A PostgreSQL store's connection options from the settings. */
export function pgOptions (url: string, config: StoreConfig): PgConnectionOptions {
  return { url, poolMax: config.pgPoolMax, statementTimeoutMs: config.pgStatementTimeoutMs, connectTimeoutMs: config.pgConnectTimeoutMs, preparedStatements: config.pgPreparedStatements }
}
