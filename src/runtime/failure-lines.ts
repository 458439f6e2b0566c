import { ConfigError, type Config } from '../config/index.js'
import { DescribedError } from '../errors.js'
import { postgresFailureLine } from '../store/postgres/start-failure.js'

/*
 * Start-up (and CLI) failures as one line for people: the cause, read from the drivers' error codes,
 * and the setting to look at. Never a password: the PostgreSQL target is named by its parts
 * (store/location.ts), never by its URL.
 */

interface ErrorLike { message: string, code?: unknown, syscall?: unknown, path?: unknown, errors?: unknown, cause?: unknown }

function isErrorLike (v: unknown): v is ErrorLike {
  return typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string'
}

/** The error and its causes (and an AggregateError's first error), outermost first. */
export function errorChain (err: unknown): ErrorLike[] {
  const out: ErrorLike[] = []
  let e: unknown = err
  while (isErrorLike(e) && out.length < 10) {
    out.push(e)
    if (Array.isArray(e.errors) && e.errors.length > 0 && isErrorLike(e.errors[0])) out.push(e.errors[0] as ErrorLike)
    e = e.cause
  }
  return out
}

const PERMISSION = new Set(['EACCES', 'EPERM', 'EROFS'])

function oneLine (s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim()
}

function postgres (errors: ErrorLike[], url: string, connectTimeoutMs: number): string | undefined {
  // The PostgreSQL store's own one-line description, or one made the same way (store/postgres/start-failure.ts).
  const line = errors.find(e => e.message.startsWith('PostgreSQL at '))?.message ?? postgresFailureLine(errors[0], url, connectTimeoutMs)
  return line === undefined ? undefined : oneLine(line)
}

function sqlite (errors: ErrorLike[], path: string): string | undefined {
  const fs = errors.find(e => typeof e.code === 'string' && PERMISSION.has(e.code))
  if (fs !== undefined) {
    const target = typeof fs.path === 'string' ? fs.path : path
    const what = fs.syscall === 'mkdir' ? 'create the directory' : 'open'
    return `permission denied: cannot ${what} ${target} (${fs.code as string}); make its directory writable by this user, or point DATABASE_URL elsewhere`
  }
  const db = errors.find(e => typeof e.code === 'string' && e.code.startsWith('SQLITE_'))
  if (db !== undefined) {
    const code = db.code as string
    if (code === 'SQLITE_CANTOPEN' || code.startsWith('SQLITE_READONLY')) {
      return `permission denied: cannot write the SQLite database ${path} (${code}: ${oneLine(db.message)}); make its directory writable by this user, or point DATABASE_URL elsewhere`
    }
    return `SQLite database ${path}: ${oneLine(db.message)} (${code}); check DATABASE_URL`
  }
  return undefined
}

/** Why a listener could not listen on host:port, naming the two settings that chose them. */
export function describeListenFailure (err: unknown, host: string, port: number, vars: { host: string, port: string } = { host: 'HOST', port: 'PORT' }): string {
  const e = isErrorLike(err) ? err : { message: String(err) }
  const at = `${host}:${port}`
  if (e.code === 'EADDRINUSE') return `cannot listen on ${at}: the port is already in use (EADDRINUSE); set ${vars.port} to a free port, or stop the process using it`
  if (e.code === 'EADDRNOTAVAIL') return `cannot listen on ${at}: no such address on this machine (EADDRNOTAVAIL); check ${vars.host}`
  if (e.code === 'EACCES') return `cannot listen on ${at}: not permitted (EACCES; ports below 1024 need privileges); check ${vars.port}`
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return `cannot listen on ${at}: ${vars.host} does not resolve (${e.code}); check ${vars.host}`
  return `cannot listen on ${at}: ${oneLine(e.message)}; check ${vars.host} and ${vars.port}`
}

/** One line (no stack) saying what failed and which setting to look at. */
export function describeFailure (err: unknown, config?: Pick<Config, 'database' | 'pgConnectTimeoutMs'>): string {
  if (err instanceof ConfigError) return `invalid configuration: ${oneLine(err.message)}`
  if (err instanceof DescribedError) return oneLine(err.message)
  const errors = errorChain(err)
  const outer = errors[0]
  if (outer === undefined) return oneLine(String(err))
  let line: string | undefined
  if (config !== undefined) {
    line = config.database.kind === 'postgres' ? postgres(errors, config.database.url, config.pgConnectTimeoutMs) : sqlite(errors, config.database.path)
  }
  return line ?? errors.map(e => oneLine(e.message)).filter((m, i, all) => m !== '' && all.indexOf(m) === i).join(': ')
}
