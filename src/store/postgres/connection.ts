import { createHash } from 'node:crypto'
import pg from 'pg'
import { OutcomeUnknownError, StoreUnavailableError } from '../../errors.js'
import type { StoreConfig } from '../options.js'
import type { NamingStopped } from '../store.js'

/**
 * The store's settings and its URL. pgPreparedStatements, named (server-side prepared) statements:
 * `on`: direct connections or a pooler that tracks them.
 * `auto`: stable-plan statements that run alone are named until the server reports one missing or
 * already there (a transaction-mode pooler), then never again; the refused statement ran nothing and
 * is retried unnamed. Explicit transactions stay unnamed, so the probe never aborts one.
 */
export type PgConnectionOptions = Omit<StoreConfig, 'database'> & { url: string }

/** int8 parsed to BigInt, exactly; set on our pools only, never on pg's global parser table. */
const pgTypes = new pg.TypeOverrides()
pgTypes.setTypeParser(pg.types.builtins.INT8, BigInt)

/**
 * No startup parameter beyond user, database and application_name: a transaction-mode pooler refuses
 * others and would not keep a session setting anyway; see txPrologue.
 */
function clientConfig (opts: PgConnectionOptions): pg.ClientConfig {
  return {
    connectionString: opts.url,
    connectionTimeoutMillis: opts.pgConnectTimeoutMs,
    keepAlive: true,
    application_name: 'petstore',
    types: pgTypes
  }
}

/**
 * First message of every write transaction: SET LOCAL, so the settings hold on whichever server
 * connection a pooler picks and leak to no other client. synchronous_commit=on makes a 201 mean the
 * commit is flushed; the timeouts free locks held by a stuck write or a vanished client.
 */
export function txPrologue (statementTimeoutMs: number): string {
  const ms = Math.trunc(statementTimeoutMs)
  return `BEGIN; SET LOCAL synchronous_commit = on; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms + 1000}`
}

export interface PgStatement {
  name?: string
  /** Named in auto mode too: its generic plan suits every value (a skewed filter such as status does not). */
  stablePlan?: boolean
  text: string
  values?: unknown[]
}

/** A named statement missing on this server connection (26000) or prepared there by another client (42P05). */
const POOLER_STATEMENT_CODES = new Set(['26000', '42P05'])

export class PgDatabase {
  readonly pool: pg.Pool
  private readonly prologue: string
  private autoNamed: boolean
  /** The name carries a hash of the text, so one name never means two texts across versions. */
  private readonly names = new Map<string, string>()
  /** Settled by the first refusal in auto mode; a later one (a concurrent query's) changes nothing. */
  private readonly stopped = Promise.withResolvers<NamingStopped>()

  constructor (private readonly opts: PgConnectionOptions) {
    this.prologue = txPrologue(opts.pgStatementTimeoutMs)
    this.autoNamed = opts.pgPreparedStatements === 'auto'
    this.pool = new pg.Pool({
      ...clientConfig(opts),
      max: opts.pgPoolMax,
      // BEGIN … COMMIT in one round trip: no lock is held across a client round trip.
      pipeline: true,
      // Reads run without the prologue; the client bounds them (and drops the connection).
      query_timeout: opts.pgStatementTimeoutMs + 1000
    })
    // Without listeners a connection the server drops (idle or checked out) would crash the process.
    this.pool.on('error', () => {})
    this.pool.on('connect', (client) => { client.on('error', () => {}) })
  }

  get namedReads (): boolean {
    return this.opts.pgPreparedStatements === 'on' || this.autoNamed
  }

  onNamingStopped (fn: (e: NamingStopped) => void): void {
    void this.stopped.promise.then(fn)
  }

  private named (s: PgStatement, name: string): pg.QueryConfig {
    let full = this.names.get(name)
    if (full === undefined) {
      full = `${name}_${createHash('sha256').update(s.text).digest('hex').slice(0, 12)}`
      this.names.set(name, full)
    }
    return { name: full, text: s.text, values: s.values ?? [] }
  }

  private prepared (s: PgStatement): pg.QueryConfig {
    return this.opts.pgPreparedStatements === 'on' && s.name !== undefined
      ? this.named(s, s.name)
      : { text: s.text, values: s.values ?? [] }
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow> (s: PgStatement): Promise<pg.QueryResult<R>> {
    return await guard(async () => await this.runNamedOrNot<R>(async (q) => await this.pool.query<R>(q), s))
  }

  /** A one-statement write; once sent, a failure the server did not confirm is OutcomeUnknownError. */
  async write<R extends pg.QueryResultRow = pg.QueryResultRow> (s: PgStatement): Promise<pg.QueryResult<R>> {
    return await this.withClient(async (client) => await commitOutcome(async () => await this.runNamedOrNot<R>(async (q) => await client.query<R>(q), s)))
  }

  /** A pooled connection for `fn`; one it failed on is dropped, not reused. */
  private async withClient<T> (fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return await guard(async () => {
      const client = await this.pool.connect()
      let failed = true
      try {
        const out = await fn(client)
        failed = false
        return out
      } finally {
        client.release(failed)
      }
    })
  }

  private async runNamedOrNot<R extends pg.QueryResultRow> (run: (q: pg.QueryConfig) => Promise<pg.QueryResult<R>>, s: PgStatement): Promise<pg.QueryResult<R>> {
    if (!this.autoNamed || s.name === undefined || s.stablePlan !== true) return await run(this.prepared(s))
    try {
      return await run(this.named(s, s.name))
    } catch (err) {
      const { code = '', message = '' } = err as { code?: string, message?: string }
      if (!POOLER_STATEMENT_CODES.has(code)) throw err
      // Refused at Parse or Bind: it ran nothing, so it is safe to retry unnamed.
      this.autoNamed = false
      this.stopped.resolve({ code, serverMessage: message })
      return await run({ text: s.text, values: s.values ?? [] })
    }
  }

  /** Resolves once COMMIT returned, so once the commit is durable; any failure rolls it all back. */
  async transaction (statements: PgStatement[]): Promise<Array<pg.QueryResult<pg.QueryResultRow>>> {
    return await this.withClient(async (client) => {
      const settled = await Promise.allSettled([
        client.query(this.prologue),
        ...statements.map(async s => await client.query(this.prepared(s))),
        client.query('COMMIT')
      ])
      const rejected = settled.find(r => r.status === 'rejected')
      if (rejected !== undefined) throw rejected.reason
      return settled.slice(1, -1).map(r => (r as PromiseFulfilledResult<pg.QueryResult>).value)
    })
  }

  async interactive<T> (fn: (query: PgDatabase['query']) => Promise<T>): Promise<T> {
    return await this.withClient(async (client) => {
      const begun = client.query(this.prologue).then(() => undefined, (err: unknown) => err)
      try {
        const out = await fn(async <R extends pg.QueryResultRow>(s: PgStatement) => await client.query<R>(this.prepared(s)))
        const beginError = await begun
        if (beginError !== undefined) throw beginError
        // Before COMMIT, any failure leaves nothing written; from here on only the server's answer tells.
        await commitOutcome(async () => await client.query('COMMIT'))
        return out
      } catch (err) {
        if (err instanceof OutcomeUnknownError) throw err
        throw (await begun) ?? err
      }
    })
  }

  async end (): Promise<void> {
    await this.pool.end()
  }
}

export function createMigrationClient (opts: PgConnectionOptions): pg.Client {
  const client = new pg.Client(clientConfig(opts))
  client.on('error', () => {})
  return client
}

/* SQLSTATE classes and codes meaning "cannot take this work now" (a retry may succeed). */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58'])
const UNAVAILABLE_CODES = new Set(['40001', '40P01', '55P03'])

export function isUnavailableError (err: unknown): boolean {
  if (err instanceof TypeError || err instanceof RangeError) return false
  if (err instanceof pg.DatabaseError) {
    const code = err.code ?? ''
    return UNAVAILABLE_CLASSES.has(code.slice(0, 2)) || UNAVAILABLE_CODES.has(code)
  }
  // Not the server's (or the pooler's) answer: a socket error, a timeout, or a connection that ended mid-query.
  return true
}

/** PgBouncer's messages for a statement that never reached a server. */
const NEVER_SENT_BY_POOLER = /^(query_wait_timeout|pgbouncer cannot connect to server|server login has been failing)/

/**
 * Only the server's ERROR or the pooler's "never sent" proves nothing committed. A timeout, lost
 * connection or FATAL leaves it unknown: a statement queued to a stalled server still runs when it resumes.
 */
async function commitOutcome<T> (fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof pg.DatabaseError && (err.severity === 'ERROR' || NEVER_SENT_BY_POOLER.test(err.message))) throw err
    throw new OutcomeUnknownError('the database did not confirm the commit', { cause: err })
  }
}

export async function guard<T> (fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err
    if (isUnavailableError(err)) throw new StoreUnavailableError('the database is unavailable', { cause: err })
    throw err
  }
}
