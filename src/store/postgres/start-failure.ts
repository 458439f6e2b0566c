import { StoreUnavailableError } from '../../errors.js'
import { postgresTarget } from '../location.js'

/**
 * One line an operator can act on: where (never the password), the server's or pooler's answer, and
 * the setting to look at. The original error stays the `cause`.
 */
export function startFailure (err: unknown, url: string, connectTimeoutMs: number): StoreUnavailableError {
  const e = (err ?? {}) as { code?: unknown, message?: unknown }
  const text = typeof e.message === 'string' ? e.message : String(err)
  const { cause, check } = explain(err, connectTimeoutMs) ??
    { cause: typeof e.code === 'string' && !text.startsWith(e.code) ? `${e.code} ${text}` : text, check: 'DATABASE_URL and the server\'s log' }
  return new StoreUnavailableError(`PostgreSQL at ${describeTarget(url)}: ${cause}; check ${check}`, { cause: err })
}

/**
 * startFailure's line for an error met on an open store (the CLI's, or the server's first-key check),
 * when it or one of its causes is PostgreSQL's, the pooler's or the socket's answer; otherwise undefined.
 * Loads no driver: failure-lines.ts, which every command loads, calls it.
 */
export function postgresFailureLine (err: unknown, url: string, connectTimeoutMs: number): string | undefined {
  return explain(err, connectTimeoutMs) === undefined ? undefined : startFailure(err, url, connectTimeoutMs).message
}

/** The URL parses and its parts decode: config/index.ts refuses it otherwise. */
function describeTarget (url: string): string {
  const t = postgresTarget(url)
  return `${t.host}:${t.port} (database "${t.database}"${t.user === undefined ? '' : `, user "${t.user}"`})`
}

export class PgSettingError extends Error {
  constructor (message: string, readonly check: string) {
    super(message)
    this.name = 'PgSettingError'
  }
}

/** Exact code first, then its class. */
const BY_CODE: ReadonlyMap<string, string> = new Map([
  ['28P01', 'the user and password in DATABASE_URL (and the server\'s, or the pooler\'s auth_file, entry for that user)'],
  ['28000', 'the user in DATABASE_URL and the server\'s pg_hba.conf (or the pooler\'s auth settings) for this client address'],
  ['3D000', 'the database name in DATABASE_URL (create it, or point the pooler\'s [databases] entry at it)'],
  ['53300', 'max_connections on the server (or max_client_conn and default_pool_size on the pooler) against PG_POOL_MAX × instances'],
  ['57P03', 'that the server has finished starting (or is not shutting down), then start again'],
  ['42501', 'the privileges of the user in DATABASE_URL: migrations need CREATE on the database (or run `petstore migrate` as its owner)'],
  ['0A000', 'the server version and the pooler\'s pool_mode']
])
/* PgBouncer answers most of its own refusals with 08P01: only the text tells them apart. */
const BY_POOLER_TEXT: Array<[RegExp, string]> = [
  [/unsupported startup parameter/i, 'the pooler\'s ignore_startup_parameters (a transaction-mode pooler refuses any other startup parameter; remove options from DATABASE_URL)'],
  [/password|auth/i, 'the user and password in DATABASE_URL (and the pooler\'s auth_file and auth_type)'],
  [/no such database|unknown database/i, 'the database name in DATABASE_URL, and the pooler\'s [databases] section'],
  [/no more connections|max_client_conn/i, 'the pooler\'s max_client_conn against PG_POOL_MAX × instances'],
  [/cannot connect to server|server login/i, 'the PostgreSQL server behind the pooler (running? the host and port of the pooler\'s [databases] entry)']
]

const BY_CLASS: ReadonlyMap<string, string> = new Map([
  ['08', 'the host and port in DATABASE_URL, and the server\'s (or the pooler\'s) log'],
  ['53', 'the server\'s resources (disk, memory, max_connections)'],
  ['57', 'the server\'s state (its log)'],
  ['58', 'the server\'s log (an I/O or system error)']
])

const BY_ERRNO: ReadonlyMap<string, { cause: string, check: string }> = new Map(Object.entries({
  ECONNREFUSED: { cause: 'connection refused (ECONNREFUSED)', check: 'the host and port in DATABASE_URL, and that PostgreSQL (or the pooler) is running there' },
  ENOTFOUND: { cause: 'host name not found (ENOTFOUND)', check: 'the host in DATABASE_URL' },
  EAI_AGAIN: { cause: 'host name lookup failed (EAI_AGAIN)', check: 'the host in DATABASE_URL and DNS' },
  EHOSTUNREACH: { cause: 'host unreachable (EHOSTUNREACH)', check: 'the host in DATABASE_URL and the network route to it' },
  ENETUNREACH: { cause: 'network unreachable (ENETUNREACH)', check: 'the host in DATABASE_URL and the network route to it' },
  ECONNRESET: { cause: 'the connection was reset (ECONNRESET)', check: 'sslmode in DATABASE_URL, and the server\'s (or the pooler\'s) log' },
  ETIMEDOUT: { cause: 'the connection timed out (ETIMEDOUT)', check: 'the host and port in DATABASE_URL, and firewalls between' }
}))

/** The first error of the chain (err, then its causes) that says what went wrong; undefined when none does. */
function explain (err: unknown, connectTimeoutMs: number, depth = 0): { cause: string, check: string } | undefined {
  if (err instanceof PgSettingError) return { cause: err.message, check: err.check }
  const e = (err ?? {}) as { code?: unknown, message?: unknown, severity?: unknown, cause?: unknown }
  const code = typeof e.code === 'string' ? e.code : ''
  const text = typeof e.message === 'string' ? e.message : String(err)
  // The server's (or the pooler's) answer: pg's DatabaseError, known by its shape so no driver is loaded.
  if (typeof e.severity === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
    return {
      cause: `${e.severity} ${code} ${text}`,
      check: BY_CODE.get(code) ??
        (code === '08P01' ? BY_POOLER_TEXT.find(([re]) => re.test(text))?.[1] : undefined) ??
        BY_CLASS.get(code.slice(0, 2)) ?? 'the server\'s log for this error'
    }
  }
  const errno = BY_ERRNO.get(code)
  if (errno !== undefined) return errno
  if (/timeout/i.test(text)) {
    return {
      cause: `no answer within PG_CONNECT_TIMEOUT_MS (${connectTimeoutMs} ms)`,
      check: 'the host and port in DATABASE_URL (something accepts connections there but does not answer as PostgreSQL), and PG_CONNECT_TIMEOUT_MS'
    }
  }
  if (/terminated unexpectedly|Connection terminated/i.test(text)) {
    return { cause: 'the server closed the connection unexpectedly', check: 'sslmode in DATABASE_URL, and the server\'s (or the pooler\'s) log' }
  }
  if (/password/i.test(text)) return { cause: text, check: 'the password in DATABASE_URL' }
  // Causes followed as errorChain (runtime/failure-lines.ts) follows them: ten deep at most, so a cycle ends.
  return e.cause === undefined || depth >= 10 ? undefined : explain(e.cause, connectTimeoutMs, depth + 1)
}
