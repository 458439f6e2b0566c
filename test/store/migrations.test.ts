import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { migrateSqlite } from '../../src/store/sqlite/migrations.js'

/** The migration loop, run by a real (in-memory) SQLite database over lists of its own. */
describe('migrations', () => {
  const versions = (db: Database.Database) => db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all()

  it('applies in order only what is not applied, and answers the versions it applied', () => {
    const db = new Database(':memory:')
    const list = [
      { version: 1, name: 'a', sql: 'CREATE TABLE a (x)' },
      { version: 2, name: 'b', sql: 'CREATE TABLE b (x)' }
    ]
    assert.deepEqual(migrateSqlite(db, list.slice(0, 1)), [1])
    assert.deepEqual(migrateSqlite(db, list), [2])
    assert.deepEqual(migrateSqlite(db, list), [])
    assert.deepEqual(versions(db), [1, 2])
    db.close()
  })

  it('leaves a migration that fails unapplied and unrecorded, and stops there', () => {
    const db = new Database(':memory:')
    const list = [
      { version: 1, name: 'a', sql: 'CREATE TABLE a (x)' },
      { version: 2, name: 'broken', sql: 'CREATE TABLE c (x); CREATE TABLE nope (' },
      { version: 3, name: 'c', sql: 'CREATE TABLE d (x)' }
    ]
    assert.throws(() => migrateSqlite(db, list), /syntax error|incomplete input/)
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all()
    assert.deepEqual(tables, ['a', 'schema_migrations'])
    assert.deepEqual(versions(db), [1])
    db.close()
  })

  it('refuses a list whose versions do not run 1, 2, 3… before applying anything', () => {
    const db = new Database(':memory:')
    const list = [
      { version: 1, name: 'a', sql: 'CREATE TABLE a (x)' },
      { version: 3, name: 'gap', sql: 'CREATE TABLE b (x)' }
    ]
    assert.throws(() => migrateSqlite(db, list), /migration "gap" has version 3; expected 2/)
    assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), [])
    db.close()
  })
})
