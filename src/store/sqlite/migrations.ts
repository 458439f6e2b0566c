import type Database from 'better-sqlite3'
import { checkVersions, type Migration } from '../migrations.js'

/** Frozen once released: never edit one, add the next. Versions and names match PG_MIGRATIONS. */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'pets and api keys',
    sql: `
      CREATE TABLE pets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('available', 'pending', 'sold'))
      );
      CREATE INDEX pets_status_id ON pets (status, id);
      CREATE TABLE api_keys (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        last_used_at TEXT,
        revoked_at TEXT
      );
      CREATE TABLE settings (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
    `
  },
  {
    version: 2,
    name: 'idempotency keys',
    // created_at in epoch ms.
    sql: `
      CREATE TABLE idempotency_keys (
        api_key_id INTEGER NOT NULL REFERENCES api_keys (id),
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        pet_id INTEGER NOT NULL REFERENCES pets (id),
        created_at INTEGER NOT NULL,
        PRIMARY KEY (api_key_id, key)
      ) WITHOUT ROWID;
      CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
    `
  },
  {
    version: 3,
    name: 'pet insert function',
    // PostgreSQL only: SQLite's one writer already orders inserts. Kept so versions match.
    sql: ''
  },
  {
    version: 4,
    name: 'api key scopes and expiry',
    // Keys made before scopes keep both scopes; revoked_at may now be in the future (scheduled).
    sql: `
      ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'pets:read pets:write';
      ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
    `
  }
]

/** Each in its own IMMEDIATE transaction: the write lock comes first, so concurrent starts apply each once. */
export function migrateSqlite (db: Database.Database, migrations: readonly Migration[] = SQLITE_MIGRATIONS): number[] {
  checkVersions(migrations)
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`)
  const isApplied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?')
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
  const apply = db.transaction((m: Migration) => {
    if (isApplied.get(m.version) !== undefined) return false
    db.exec(m.sql)
    record.run(m.version, m.name, new Date().toISOString())
    return true
  })
  const applied: number[] = []
  for (const m of migrations) {
    if (apply.immediate(m)) applied.push(m.version)
  }
  return applied
}
