import pg from 'pg'
import { StoreUnavailableError } from '../../errors.js'

export interface PgConnectionOptions {
  url: string
  poolMax: number
  statementTimeoutMs: number
  connectTimeoutMs: number
}

const INT8_OID = 20

/**
 * int8 columns (ids, category ids, counts) are parsed to BigInt, exactly: pg would otherwise hand
 * back strings. Set on our pools only, never on pg's global parser table.
 */
export const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary' ? (v: string) => BigInt(v) : pg.types.getTypeParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser']
}

/** Connection settings shared by the pool and the migration client. */
function clientConfig (opts: PgConnectionOptions): pg.ClientConfig {
  return {
    connectionString: opts.url,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    keepAlive: true,
    application_name: 'petstore',
    // The durability promise: a commit returns only once its WAL is flushed. Read back at start.
    options: '-c synchronous_commit=on',
    types: pgTypes
  }
}

export function createPool (opts: PgConnectionOptions): pg.Pool {
  const pool = new pg.Pool({
    ...clientConfig(opts),
    max: opts.poolMax,
    statement_timeout: opts.statementTimeoutMs,
    // The server enforces statement_timeout; this client-side bound covers a server (or network)
    // that has gone silent and would never answer, which would otherwise hang the request.
    query_timeout: opts.statementTimeoutMs + 1000,
    idle_in_transaction_session_timeout: opts.statementTimeoutMs + 1000
  })
  // An idle connection the server drops (restart, failover) is reported here; the pool already
  // discards it and the next query opens a new one. Without a listener it would crash the process.
  pool.on('error', () => {})
  return pool
}

/** A single connection for migrations: no statement timeout, since waiting for the lock may be long. */
export function createMigrationClient (opts: PgConnectionOptions): pg.Client {
  const client = new pg.Client(clientConfig(opts))
  client.on('error', () => {})
  return client
}

/*
 * SQLSTATE classes meaning "the database cannot take this work now": 08 connection exception,
 * 53 insufficient resources (too many connections, disk full), 57 operator intervention (shutdown,
 * starting up, statement timeout), 58 system error; plus serialization failure, deadlock and lock
 * timeout, which a retry resolves.
 */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58'])
const UNAVAILABLE_CODES = new Set(['40001', '40P01', '55P03'])
const SQLSTATE = /^[0-9A-Z]{5}$/

/** Whether a pg failure means the database is unreachable or refusing work (as opposed to a bug). */
export function isUnavailableError (err: unknown): boolean {
  if (err instanceof TypeError || err instanceof RangeError) return false
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && SQLSTATE.test(code) && (err as { severity?: unknown }).severity !== undefined) {
    return UNAVAILABLE_CLASSES.has(code.slice(0, 2)) || UNAVAILABLE_CODES.has(code)
  }
  // No SQLSTATE: a socket error (ECONNREFUSED, ECONNRESET…), a connect or read timeout, or a
  // connection that ended mid-query.
  return true
}

/** Runs a pg call, turning "cannot work now" failures into StoreUnavailableError. */
export async function guard<T> (fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (isUnavailableError(err)) throw new StoreUnavailableError('the database is unavailable', { cause: err })
    throw err
  }
}
