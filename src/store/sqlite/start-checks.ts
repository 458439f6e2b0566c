import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { DescribedError } from '../../errors.js'

/*
 * Before serving a SQLite store a start refuses to make a new empty store where one was (the marker
 * beside the database), to open a store other than the one the marker names, and to open a malformed
 * one. See docs/explanation/durability.md.
 */

export const markerPath = (path: string): string => `${path}.store-id`

/**
 * For a `path` that isNew: a marker or a -wal there means a store was. `loading`: an import or copy
 * into the path, which makes the store anew rather than starting an empty one.
 */
export function refuseNewWhereDataWas (path: string, loading = false): void {
  const marker = markerPath(path)
  const instead = loading ? 'load this data there in its place' : 'start a new empty store there'
  const again = loading ? 'run the command again' : 'start again'
  if (existsSync(marker)) {
    const id = readFileSync(marker, 'utf8').trim()
    throw new StoreMissingError(`the SQLite database ${path} does not exist, but ${marker} says store ${id} was created there: its pets and keys are gone (removed or moved). ` +
      `Put the database back (restore a backup), or, to ${instead}${loading ? '' : ' with a new first key'}, delete ${marker} and ${again}`)
  }
  if (existsSync(`${path}-wal`)) {
    throw new StoreMissingError(`the SQLite database ${path} does not exist, but its write-ahead log ${path}-wal does: its data is gone (removed or moved). ` +
      `Put the database back (restore a backup), or, to ${instead}, move ${path}-wal and ${path}-shm away and ${again}`)
  }
}

/**
 * The store id in the header of the database at `path` (0: none), read on a read-only connection
 * (which also reads a write-ahead log not yet checkpointed) so that a file refused is left as it
 * was; undefined when it cannot be read, which the open that follows reports.
 */
function storeIdOf (path: string): number | undefined {
  let db: Database.Database | undefined
  try {
    db = new Database(path, { readonly: true, fileMustExist: true })
    return Number(db.pragma('application_id', { simple: true }))
  } catch {
    return undefined
  } finally {
    db?.close()
  }
}

/**
 * For a database at `path` that is not new: when a marker is there, the database must be the store
 * it names. Another store moved or copied over the path (or one an import made, which has no id yet)
 * would otherwise be served, backed up or loaded into as this one, its marker rewritten and, on a
 * store without keys, a new first key made. Deleting the marker says the database is meant (a restore).
 * `opener`, who meets a refusal: a server start, or a command (which the operator runs again).
 */
export function refuseForeignStore (path: string, opener: 'start' | 'command'): void {
  const marker = markerPath(path)
  if (!existsSync(marker)) return
  const expected = readFileSync(marker, 'utf8').trim()
  const found = storeIdOf(path)
  if (found === undefined || String(found) === expected) return
  const is = found === 0 ? 'has no store id (made by petstore import or copy, or not a Petstore database)' : `is store ${found}`
  throw new ForeignStoreError(`the SQLite database ${path} is not the store ${marker} says was created there (store ${expected}): it ${is}, so another database was moved or copied over it; ` +
    `${opener === 'start' ? 'it is not served' : 'the command leaves it untouched'}. Put this store's database back, or, if this database is meant to be here (a restore), ` +
    `delete ${marker} and ${opener === 'start' ? 'start' : 'run the command'} again`)
}

export function writeMarker (path: string, storeId: number): void {
  const marker = markerPath(path)
  const text = `${storeId}\n`
  if (existsSync(marker) && readFileSync(marker, 'utf8') === text) return
  writeFileSync(marker, text, { mode: 0o600, flush: true })
}

/**
 * What quick_check found wrong, undefined when nothing: it reads every page; the slower
 * integrity_check is left to the operator. A page it cannot read is what it found.
 */
export function quickCheck (db: Database.Database): { found: string, cause?: unknown } | undefined {
  let problems: string[]
  try {
    problems = db.prepare('PRAGMA quick_check(3)').pluck().all() as string[]
  } catch (err) {
    return { found: (err as Error).message, cause: err }
  }
  return problems.length === 1 && problems[0] === 'ok' ? undefined : { found: problems.join('; ') }
}

/** What the checking process (check-worker.ts) answers: passed, what quick_check found, or why it could not check. */
export type CheckResponse =
  | { passed: true }
  | { passed: false, found: string }
  | { passed: false, error: { message: string, code: string | undefined } }

export function isMalformedError (err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')
}

export class StoreMissingError extends DescribedError {
  override name = 'StoreMissingError'
}

export class ForeignStoreError extends DescribedError {
  override name = 'ForeignStoreError'
}

export class MalformedStoreError extends DescribedError {
  constructor (readonly path: string, found: string, cause?: unknown) {
    super(`the SQLite database ${path} is malformed (PRAGMA quick_check: ${found.replace(/\s*\n\s*/g, ' ')}); it is not served. ` +
      `Check it with: sqlite3 ${path} 'PRAGMA integrity_check', and restore it from a backup`, { cause })
    this.name = 'MalformedStoreError'
  }
}
