import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { isUnavailableError, openSqlite } from '../../../src/store/sqlite/connection.js'
import { migrateSqlite, SQLITE_MIGRATIONS } from '../../../src/store/sqlite/migrations.js'
import { SqliteStore } from '../../../src/store/sqlite/index.js'
import { tempDir } from '../../helpers/app.js'
import { onCleanup } from '../../helpers/cleanup.js'

describe('SQLite connection', () => {
  it('runs in WAL mode with synchronous=FULL, a busy timeout and foreign keys, read back from SQLite', (t) => {
    const db = openSqlite(join(tempDir(t), 'p.db'), 'FULL')
    onCleanup(t, () => db.close())
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal')
    assert.equal(Number(db.pragma('synchronous', { simple: true })), 2)
    assert.equal(Number(db.pragma('busy_timeout', { simple: true })), 5000)
    assert.equal(Number(db.pragma('foreign_keys', { simple: true })), 1)
  })

  it('sets the configured synchronous level (EXTRA = 3)', (t) => {
    const db = openSqlite(join(tempDir(t), 'p.db'), 'EXTRA')
    onCleanup(t, () => db.close())
    assert.equal(Number(db.pragma('synchronous', { simple: true })), 3)
  })

  it('leaves the store file in WAL mode for every later connection', async (t) => {
    const path = join(tempDir(t), 'p.db')
    const store = await SqliteStore.open({ path, synchronous: 'FULL' })
    await store.close()
    const db = new Database(path, { readonly: true })
    onCleanup(t, () => db.close())
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal')
  })
})

describe('SQLite migrations', () => {
  it('apply once, in order, and are recorded', (t) => {
    const db = openSqlite(join(tempDir(t), 'p.db'), 'FULL')
    onCleanup(t, () => db.close())
    assert.deepEqual(migrateSqlite(db), SQLITE_MIGRATIONS.map(m => m.version))
    assert.deepEqual(migrateSqlite(db), [])
    const rows = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: bigint }>
    assert.deepEqual(rows.map(r => Number(r.version)), SQLITE_MIGRATIONS.map(m => m.version))
  })
})

describe('isUnavailableError', () => {
  it('counts a call on a closed connection as unavailable (503), not a bug (500)', () => {
    const db = new Database(':memory:')
    db.close()
    let caught: unknown
    try { db.prepare('SELECT 1') } catch (err) { caught = err }
    assert.equal(isUnavailableError(caught), true)
    assert.equal(isUnavailableError(new TypeError('something else')), false)
  })
})
