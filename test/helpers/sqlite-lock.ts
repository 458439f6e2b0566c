import type { TestContext } from 'node:test'
import Database from 'better-sqlite3'
import { onCleanup } from './cleanup.js'

/**
 * Another connection holding the SQLite file at `path` in exclusive locking mode: nothing else can
 * read it until released (or the test ends). Its locks are POSIX locks: closing any descriptor of
 * the file in this process drops them.
 */
export function holdLock (t: TestContext, path: string): () => void {
  const holder = new Database(path)
  holder.pragma('locking_mode = EXCLUSIVE')
  holder.exec('BEGIN EXCLUSIVE')
  holder.exec('COMMIT')
  const release = () => { if (holder.open) holder.close() }
  onCleanup(t, release)
  return release
}
