import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs'
import type Database from 'better-sqlite3'
import { DescribedError } from '../../errors.js'

/*
 * What a start checks before it serves a SQLite store (docs/explanation/durability.md): that it does
 * not make a new empty store where one was (the marker file beside the database, written when a
 * store is first opened there), and that the store it opens is not malformed (PRAGMA quick_check).
 */

/** The marker beside the database: written when a store is opened there, holding its id. */
export const markerPath = (path: string): string => `${path}.store-id`

/**
 * Refuses to create a new database at `path` when a store was there before: its marker is present,
 * or its write-ahead log is (a log without its database). Called only when `path` does not exist.
 */
export function refuseNewWhereDataWas (path: string): void {
  const marker = markerPath(path)
  if (existsSync(marker)) {
    const id = readFileSync(marker, 'utf8').trim()
    throw new StoreMissingError(`the SQLite database ${path} does not exist, but ${marker} says store ${id} was created there: its pets and keys are gone (removed or moved). ` +
      `Put the database back (restore a backup), or, to start a new empty store there with a new first key, delete ${marker} and start again`)
  }
  if (existsSync(`${path}-wal`)) {
    throw new StoreMissingError(`the SQLite database ${path} does not exist, but its write-ahead log ${path}-wal does: its data is gone (removed or moved). ` +
      `Put the database back (restore a backup), or, to start a new empty store there, move ${path}-wal and ${path}-shm away and start again`)
  }
}

/** Writes (or rewrites) the marker with the store's id, made durable with the database. */
export function writeMarker (path: string, storeId: number): void {
  const marker = markerPath(path)
  const text = `${storeId}\n`
  if (existsSync(marker) && readFileSync(marker, 'utf8') === text) return
  const fd = openSync(marker, 'w', 0o600)
  try {
    writeSync(fd, text)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Refuses a malformed database: PRAGMA quick_check reads every page of it (the b-trees, the records
 * and their constraints), at a cost of a second or two per 100 MB; integrity_check also matches
 * every index against its table, at about two and a half times that, and is left to the operator.
 */
export function refuseMalformed (db: Database.Database, path: string): void {
  let problems: string[]
  try {
    problems = (db.pragma('quick_check(3)') as Array<{ quick_check: string }>).map(r => r.quick_check)
  } catch (err) {
    throw new MalformedStoreError(path, (err as Error).message, err)
  }
  if (problems.length === 1 && problems[0] === 'ok') return
  throw new MalformedStoreError(path, problems.join('; '))
}

/** Whether a better-sqlite3 error says the file is not a sound database. */
export function isMalformedError (err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')
}

export class StoreMissingError extends DescribedError {
  constructor (message: string) {
    super(message)
    this.name = 'StoreMissingError'
  }
}

export class MalformedStoreError extends DescribedError {
  constructor (readonly path: string, found: string, cause?: unknown) {
    super(`the SQLite database ${path} is malformed (PRAGMA quick_check: ${found.replace(/\s*\n\s*/g, ' ')}); it is not served. ` +
      `Check it with: sqlite3 ${path} 'PRAGMA integrity_check', and restore it from a backup`, { cause })
    this.name = 'MalformedStoreError'
  }
}
