import type { Config } from '../config/index.js'

/** The settings that choose and tune a store (a PostgreSQL store takes them with its URL). */
export type StoreConfig = Pick<Config, 'database' | 'pgPoolMax' | 'pgStatementTimeoutMs' | 'pgConnectTimeoutMs' | 'pgPreparedStatements'>
