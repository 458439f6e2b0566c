import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { applyMigrations, type Migration } from '../../src/store/migrations.js'

/** A real (in-memory) SQLite database as the target, recording what ran. */
function target (db: Database.Database) {
  db.exec('CREATE TABLE applied (version INTEGER PRIMARY KEY)')
  return {
    transaction: (body: () => boolean) => db.transaction(body).immediate(),
    isApplied: (version: number) => db.prepare('SELECT 1 FROM applied WHERE version = ?').get(version) !== undefined,
    apply: (m: Migration) => {
      db.exec(m.sql)
      db.prepare('INSERT INTO applied VALUES (?)').run(m.version)
    }
  }
}

describe('applyMigrations', () => {
  it('applies in order only what is not applied, and answers the versions it applied', () => {
    const db = new Database(':memory:')
    const t = target(db)
    const list = [
      { version: 1, name: 'a', sql: 'CREATE TABLE a (x)' },
      { version: 2, name: 'b', sql: 'CREATE TABLE b (x)' }
    ]
    assert.deepEqual(applyMigrations(list.slice(0, 1), t), [1])
    assert.deepEqual(applyMigrations(list, t), [2])
    assert.deepEqual(applyMigrations(list, t), [])
    db.close()
  })

  it('leaves a migration that fails unapplied and unrecorded, and stops there', () => {
    const db = new Database(':memory:')
    const t = target(db)
    const list = [
      { version: 1, name: 'a', sql: 'CREATE TABLE a (x)' },
      { version: 2, name: 'broken', sql: 'CREATE TABLE c (x); CREATE TABLE nope (' },
      { version: 3, name: 'c', sql: 'CREATE TABLE d (x)' }
    ]
    assert.throws(() => applyMigrations(list, t), /syntax error|incomplete input/)
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all()
    assert.deepEqual(tables, ['a', 'applied'])
    assert.deepEqual(db.prepare('SELECT version FROM applied').pluck().all(), [1])
    db.close()
  })

  it('refuses a list whose versions do not run 1, 2, 3… before applying anything', () => {
    const db = new Database(':memory:')
    const t = target(db)
    const list = [
      { version: 1, name: 'a', sql: 'CREATE TABLE a (x)' },
      { version: 3, name: 'gap', sql: 'CREATE TABLE b (x)' }
    ]
    assert.throws(() => applyMigrations(list, t), /migration "gap" has version 3; expected 2/)
    assert.deepEqual(db.prepare('SELECT version FROM applied').pluck().all(), [])
    db.close()
  })
})
