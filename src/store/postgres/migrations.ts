import type pg from 'pg'

/**
 * Schema migrations for PostgreSQL, in order. Frozen once released: never edit one, add the next.
 * Versions and names match SQLITE_MIGRATIONS one for one (a test holds them together), so
 * `schema_migrations` reads the same on both stores.
 *
 * Names are bytea (their UTF-8 bytes): PostgreSQL text cannot hold U+0000, which the API accepts
 * in a name and SQLite keeps, and both stores must return a name exactly as it was sent.
 */
export const PG_MIGRATIONS: ReadonlyArray<{ version: number, name: string, sql: string }> = [
  {
    version: 1,
    name: 'pets and api keys',
    sql: `
      CREATE TABLE pets (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name bytea NOT NULL,
        category_id bigint NOT NULL,
        status text NOT NULL CHECK (status IN ('available', 'pending', 'sold'))
      );
      CREATE INDEX pets_status_id ON pets (status, id);
      CREATE TABLE api_keys (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name text NOT NULL,
        key_hash text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL,
        last_used_at timestamptz,
        revoked_at timestamptz
      );
      CREATE TABLE settings (
        name text PRIMARY KEY,
        value text NOT NULL
      );
    `
  },
  {
    version: 2,
    name: 'idempotency keys',
    // Written in the same transaction as the pet it created.
    sql: `
      CREATE TABLE idempotency_keys (
        api_key_id bigint NOT NULL REFERENCES api_keys (id),
        key text NOT NULL,
        fingerprint text NOT NULL,
        pet_id bigint NOT NULL REFERENCES pets (id),
        created_at timestamptz NOT NULL,
        PRIMARY KEY (api_key_id, key)
      );
      CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
    `
  }
]

/** Session advisory lock held while migrating, so N instances starting at once apply each migration once. */
export const MIGRATION_LOCK_KEY = 7_365_020_100_000_001n

/**
 * Applies the migrations not yet applied, each in its own transaction, under a session advisory
 * lock (released on return, or by the server if the connection dies); returns the versions applied.
 */
export async function migratePostgres (client: pg.Client): Promise<number[]> {
  await client.query('SET statement_timeout = 0')
  await client.query('SELECT pg_advisory_lock($1::int8)', [MIGRATION_LOCK_KEY.toString()])
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL
    )`)
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(r => r.version))
    const applied: number[] = []
    for (const m of PG_MIGRATIONS) {
      if (done.has(m.version)) continue
      await client.query('BEGIN')
      try {
        await client.query(m.sql)
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [m.version, m.name])
        await client.query('COMMIT')
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        throw err
      }
      applied.push(m.version)
    }
    return applied
  } finally {
    await client.query('SELECT pg_advisory_unlock($1::int8)', [MIGRATION_LOCK_KEY.toString()]).catch(() => {})
  }
}
