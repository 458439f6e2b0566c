import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { migrateSqlite, SQLITE_MIGRATIONS } from '../../../src/store/sqlite/migrations.js'
import { tempDir } from '../../helpers/app.js'
import { onCleanup } from '../../helpers/cleanup.js'

describe('SQLite migrations', () => {
  it('upgrades a version-1 database to the latest (2: idempotency keys; 3: PostgreSQL only, empty here; 4: key scopes and expiry), keeping its pets and its keys with every scope, once', (t) => {
    const db = new Database(join(tempDir(t), 'p.db'))
    onCleanup(t, () => db.close())
    // A database as the first release left it: migration 1 only.
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)')
    db.exec(SQLITE_MIGRATIONS[0]!.sql)
    db.prepare('INSERT INTO schema_migrations VALUES (1, ?, ?)').run(SQLITE_MIGRATIONS[0]!.name, new Date().toISOString())
    db.exec("INSERT INTO pets (name, category_id, status) VALUES ('Rex', 1, 'available')")
    db.exec(`INSERT INTO api_keys (name, key_hash, created_at) VALUES ('old', '${'ab'.repeat(32)}', '2026-01-01T00:00:00.000Z')`)

    assert.deepEqual(migrateSqlite(db), [2, 3, 4])
    assert.deepEqual(migrateSqlite(db), [])
    const recorded = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()
    assert.deepEqual(recorded, SQLITE_MIGRATIONS.map(m => ({ version: m.version, name: m.name })))
    const cols = (db.prepare('PRAGMA table_info(idempotency_keys)').all() as Array<{ name: string }>).map(c => c.name)
    assert.deepEqual(cols, ['api_key_id', 'key', 'fingerprint', 'pet_id', 'created_at'])
    assert.equal((db.prepare('SELECT count(*) AS n FROM pets').get() as { n: number }).n, 1)
    assert.deepEqual(db.prepare('SELECT name, scopes, expires_at, revoked_at FROM api_keys').all(), [{ name: 'old', scopes: 'pets:read pets:write', expires_at: null, revoked_at: null }])
  })
})
