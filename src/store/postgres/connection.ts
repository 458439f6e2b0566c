import { createHash } from 'node:crypto'
import pg from 'pg'
import { OutcomeUnknownError, StoreUnavailableError } from '../../errors.js'
import type { NamingStopped } from '../store.js'

/**
 * When statements are named (server-side prepared: parsed once per server connection, not per
 * execution). off: never. on: every statement that has a name, reads and writes — for direct
 * connections or a pooler that tracks named statements (PgBouncer >= 1.21 with
 * max_prepared_statements). auto: the statements that run alone (each in its implicit transaction)
 * and whose plan is the same for every parameter value — the primary-key reads and the pet insert of
 * a batch without Idempotency-Keys — are named until the server answers that a statement is missing
 * or already exists — what a transaction-mode pooler that does not track them causes — and then never
 * again (that statement is retried unnamed: refused, it ran nothing, so nothing is written twice);
 * statements of explicit transactions stay unnamed, so no transaction is aborted by the probe.
 */
export type PreparedStatementsMode = 'off' | 'on' | 'auto'

export interface PgConnectionOptions {
  url: string
  poolMax: number
  statementTimeoutMs: number
  connectTimeoutMs: number
  /**
   * Whether hot queries may be named (server-side) prepared statements (PreparedStatementsMode).
   * Behind a transaction-mode pooler (PgBouncer < 1.21, most managed poolers) a statement prepared
   * on one server connection is missing, or already exists, on the next.
   */
  preparedStatements: PreparedStatementsMode
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

/**
 * Connection settings shared by the pool and the migration client. No startup parameter beyond
 * user, database and application_name: a transaction-mode pooler (PgBouncer's stock
 * `ignore_startup_parameters = extra_float_digits`) refuses the connection for any other, and
 * would not keep a session setting anyway. The settings the service relies on are set per
 * transaction instead (txPrologue).
 */
function clientConfig (opts: PgConnectionOptions): pg.ClientConfig {
  return {
    connectionString: opts.url,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    keepAlive: true,
    application_name: 'petstore',
    types: pgTypes
  }
}

/**
 * The first message of every write transaction the service runs: the settings its promises rest on,
 * scoped to the transaction (SET LOCAL), so they hold whichever server connection a pooler picks
 * and leak to no other client. One simple-protocol message: no extra round trip when pipelined.
 * - synchronous_commit=on: a 201 means the commit's WAL is flushed, whatever the server default;
 * - statement_timeout: a write waiting too long for a lock (the insert lock of a batch with
 *   Idempotency-Keys) or on a stuck server gives up;
 * - idle_in_transaction_session_timeout: a client that vanished mid-transaction frees its locks.
 */
export function txPrologue (statementTimeoutMs: number): string {
  const ms = Math.trunc(statementTimeoutMs)
  return `BEGIN; SET LOCAL synchronous_commit = on; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms + 1000}`
}

/** A statement: text, parameters, and a name used only when prepared statements are on. */
export interface PgStatement {
  name?: string
  /**
   * Named in auto mode too: the statement's generic plan is the right plan for every parameter
   * value (a primary-key lookup or range), so a plan the server caches for it never turns bad. A
   * filter on a skewed column (status) is left out: its custom plan picks the index by the value.
   */
  stablePlan?: boolean
  text: string
  values?: unknown[]
}

/**
 * SQLSTATEs of a named statement that is not on the server connection the pooler picked
 * (26000 invalid_sql_statement_name) or is there already, prepared by another client (42P05).
 */
const POOLER_STATEMENT_CODES = new Set(['26000', '42P05'])

/** Runs one statement on the connection of an interactive transaction. */
export type PgQuery = <R extends pg.QueryResultRow = pg.QueryResultRow>(s: PgStatement) => Promise<pg.QueryResult<R>>

/**
 * The pool, plus how this service talks through it: statements named only when allowed, writes in
 * pipelined transactions, failures to reach the database as StoreUnavailableError.
 */
export class PgDatabase {
  readonly pool: pg.Pool
  private readonly prologue: string
  /** auto mode: true until a pooler is detected (see PreparedStatementsMode). */
  private autoNamed: boolean
  /** Statement names, each with a hash of its text: one name never means two texts (versions of the service). */
  private readonly names = new Map<string, string>()
  /** Set once auto mode stopped naming statements; told to every watcher, late ones included. */
  private stopped: NamingStopped | undefined
  private readonly stopWatchers: Array<(e: NamingStopped) => void> = []

  constructor (private readonly opts: PgConnectionOptions) {
    this.prologue = txPrologue(opts.statementTimeoutMs)
    this.autoNamed = opts.preparedStatements === 'auto'
    this.pool = new pg.Pool({
      ...clientConfig(opts),
      max: opts.poolMax,
      // A transaction's statements are written together and answered in order: BEGIN … COMMIT in
      // one round trip, so the SET LOCALs cost no wait and no lock is held for a client round trip
      // between a statement and its COMMIT.
      pipeline: true,
      // Reads run alone, without the prologue (it would cost each read a second statement);
      // the client bounds them, and writes get the server's statement_timeout first. On this bound
      // the connection is dropped (a pooler then drops its server connection too).
      query_timeout: opts.statementTimeoutMs + 1000
    })
    // An idle connection the server drops (restart, failover) is reported here; the pool already
    // discards it and the next query opens a new one. Without a listener it would crash the process.
    this.pool.on('error', () => {})
    // So is a connection lost while checked out for a transaction (the pool listens only while it
    // is idle): its pending queries fail with the error, and the transaction releases it as broken.
    this.pool.on('connect', (client) => { client.on('error', () => {}) })
  }

  /** Whether statements with a stable plan are named now (on, or auto before a pooler was detected). */
  get namedReads (): boolean {
    return this.opts.preparedStatements === 'on' || this.autoNamed
  }

  /** Calls `fn` once auto mode stops naming statements (at once if it already has). */
  onNamingStopped (fn: (e: NamingStopped) => void): void {
    if (this.stopped !== undefined) fn(this.stopped)
    else this.stopWatchers.push(fn)
  }

  private stopNaming (err: { code?: string, message?: string }): void {
    if (!this.autoNamed) return
    this.autoNamed = false
    this.stopped = { code: err.code ?? '', serverMessage: err.message ?? '' }
    for (const fn of this.stopWatchers.splice(0)) fn(this.stopped)
  }

  private named (s: PgStatement, name: string): pg.QueryConfig {
    let full = this.names.get(name)
    if (full === undefined) {
      full = `${name}_${createHash('sha256').update(s.text).digest('hex').slice(0, 12)}`
      this.names.set(name, full)
    }
    return { name: full, text: s.text, values: s.values ?? [] }
  }

  /** A statement of a write transaction: named only when prepared statements are on. */
  private prepared (s: PgStatement): pg.QueryConfig {
    return this.opts.preparedStatements === 'on' && s.name !== undefined
      ? this.named(s, s.name)
      : { text: s.text, values: s.values ?? [] }
  }

  /** One statement, in its own implicit transaction: reads. */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow> (s: PgStatement): Promise<pg.QueryResult<R>> {
    return await guard(async () => await this.runNamedOrNot<R>(async (q) => await this.pool.query<R>(q), s))
  }

  /**
   * A write that is one statement, in its own implicit transaction: it commits when it ends, and the
   * answer comes after the commit. Once it is sent, a failure without the server's word that it
   * failed is an OutcomeUnknownError (see commitOutcome); a failure to get a connection sent nothing.
   */
  async write<R extends pg.QueryResultRow = pg.QueryResultRow> (s: PgStatement): Promise<pg.QueryResult<R>> {
    return await guard(async () => {
      const client = await this.pool.connect()
      let failed = true
      try {
        const res = await commitOutcome(async () => await this.runNamedOrNot<R>(async (q) => await client.query<R>(q), s))
        failed = false
        return res
      } finally {
        client.release(failed)
      }
    })
  }

  /** Runs `s` through `run`, named when auto mode allows it (see PreparedStatementsMode). */
  private async runNamedOrNot<R extends pg.QueryResultRow> (run: (q: pg.QueryConfig) => Promise<pg.QueryResult<R>>, s: PgStatement): Promise<pg.QueryResult<R>> {
    if (!this.autoNamed || s.name === undefined || s.stablePlan !== true) return await run(this.prepared(s))
    try {
      return await run(this.named(s, s.name))
    } catch (err) {
      if (!POOLER_STATEMENT_CODES.has((err as { code?: string }).code ?? '')) throw err
      // A pooler sends our statements to server connections that did not prepare them: unnamed
      // from now on, and this statement again (refused at Parse or Bind, it ran nothing, and its
      // implicit transaction rolled back).
      this.stopNaming(err as { code?: string, message?: string })
      return await run({ text: s.text, values: s.values ?? [] })
    }
  }

  /**
   * Statements run in one transaction, with the prologue: BEGIN … COMMIT written at once, one round
   * trip. Resolves with the statements' results once COMMIT returned (so once the commit is
   * durable). Any failure rolls it all back (an aborted transaction's COMMIT is a ROLLBACK).
   */
  async transaction (statements: PgStatement[]): Promise<Array<pg.QueryResult<pg.QueryResultRow>>> {
    return await guard(async () => {
      const client = await this.pool.connect()
      let failed = true
      try {
        const settled = await Promise.allSettled([
          client.query(this.prologue),
          ...statements.map(async s => await client.query(this.prepared(s))),
          client.query('COMMIT')
        ])
        const rejected = settled.find(r => r.status === 'rejected')
        if (rejected !== undefined) throw rejected.reason
        failed = false
        return settled.slice(1, -1).map(r => (r as PromiseFulfilledResult<pg.QueryResult>).value)
      } finally {
        // A connection that failed mid-transaction is closed, not handed out again.
        client.release(failed)
      }
    })
  }

  /**
   * A transaction whose statements depend on earlier results: `fn` runs between the prologue
   * (pipelined with its first statement) and COMMIT, on one connection.
   */
  async interactive<T> (fn: (query: PgQuery) => Promise<T>): Promise<T> {
    return await guard(async () => {
      const client = await this.pool.connect()
      let failed = true
      // The prologue's own failure explains the "transaction is aborted" errors that follow it.
      const begun = client.query(this.prologue).then(() => undefined, (err: unknown) => err)
      try {
        const out = await fn(async <R extends pg.QueryResultRow>(s: PgStatement) => await client.query<R>(this.prepared(s)))
        const beginError = await begun
        if (beginError !== undefined) throw beginError
        // Until COMMIT is sent, any failure leaves nothing written: the server rolls back a
        // transaction whose client goes, and a pooler never hands a server connection that is inside
        // a transaction to another client. From here on only the server's answer tells.
        await commitOutcome(async () => await client.query('COMMIT'))
        failed = false
        return out
      } catch (err) {
        if (err instanceof OutcomeUnknownError) throw err
        throw (await begun) ?? err
      } finally {
        // Closing a connection mid-transaction rolls the transaction back (a pooler closes its
        // server connection too); it is not handed out again.
        client.release(failed)
      }
    })
  }

  async end (): Promise<void> {
    await this.pool.end()
  }
}

/** A single connection for migrations: each runs in a transaction of its own (see migrations.ts). */
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

/**
 * PgBouncer's messages to a client whose statement never reached a server: it waited for a server
 * connection (query_wait_timeout), or none could be opened (the server is down). A client linked
 * to a server that goes away is told otherwise ("server conn crashed?", a lost connection).
 */
const NEVER_SENT_BY_POOLER = /^(query_wait_timeout|pgbouncer cannot connect to server|server login has been failing)/

/**
 * Whether a failure of a statement that commits (COMMIT, or a write in its own implicit
 * transaction) says that nothing was committed: the server answered ERROR (the statement failed and
 * its transaction rolled back), or the pooler answered that the statement never reached a server.
 * Anything else (no answer within the client's bound, a lost connection, FATAL or PANIC from a
 * server that may have written the commit record first) leaves the outcome unknown: a statement
 * queued in the socket of a stalled server runs once it resumes, whatever the client did meanwhile,
 * and statement_timeout counts only from when the server reads it.
 */
function failedForSure (err: unknown): boolean {
  const e = err as { code?: unknown, severity?: unknown, message?: unknown } | null
  if (typeof e?.code !== 'string' || !SQLSTATE.test(e.code)) return false
  if (e.severity === 'ERROR') return true
  return typeof e.message === 'string' && NEVER_SENT_BY_POOLER.test(e.message)
}

/** Runs the statement that commits a write: a failure that may have committed becomes OutcomeUnknownError. */
async function commitOutcome<T> (fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (failedForSure(err)) throw err
    throw new OutcomeUnknownError('the database did not confirm the commit', { cause: err })
  }
}

/** Runs a pg call, turning "cannot work now" failures into StoreUnavailableError. */
export async function guard<T> (fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err
    if (isUnavailableError(err)) throw new StoreUnavailableError('the database is unavailable', { cause: err })
    throw err
  }
}
