import type pg from 'pg'
import { checkVersions, type Migration } from '../migrations.js'

/**
 * Frozen once released: never edit one, add the next. Versions and names match SQLITE_MIGRATIONS.
 * Names are bytea: PostgreSQL text cannot hold U+0000, which the API accepts and must return as sent.
 */
export const PG_MIGRATIONS: readonly Migration[] = [
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
  },
  {
    version: 3,
    name: 'pet insert function',
    // Every pet insert calls it (index.ts says why the lock). PL/pgSQL plans it once per server
    // connection. The Sort consumes its input, the lock included, before emitting a row, and the id
    // default is evaluated above it, so ids are drawn only under the lock, in the batch's order.
    sql: `
      CREATE FUNCTION petstore_insert_pets(names bytea[], category_ids int8[], statuses text[], lock_key int8)
      RETURNS int8[] LANGUAGE plpgsql AS $fn$
        DECLARE
          ids int8[];
        BEGIN
          WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock(lock_key)),
          inserted AS (
            INSERT INTO pets (name, category_id, status)
            SELECT t.name, t.category_id, t.status
            FROM l, unnest(names, category_ids, statuses) WITH ORDINALITY AS t(name, category_id, status, ord)
            ORDER BY t.ord
            RETURNING id
          )
          SELECT array_agg(id ORDER BY id) INTO ids FROM inserted;
          RETURN ids;
        END
      $fn$;
    `
  },
  {
    version: 4,
    name: 'api key scopes and expiry',
    // Keys made before scopes keep both scopes; revoked_at may now be in the future (scheduled).
    sql: `
      ALTER TABLE api_keys
        ADD COLUMN scopes text NOT NULL DEFAULT 'pets:read pets:write',
        ADD COLUMN expires_at timestamptz;
    `
  }
]

/** Lets N instances starting at once apply each migration once. */
export const MIGRATION_LOCK_KEY = 7_365_020_100_000_001n

/**
 * Each migration in a transaction of its own under a transaction-level advisory lock: nothing is held
 * between transactions, so it is safe through a transaction-mode pooler and a dead migrator holds nothing.
 */
export async function migratePostgres (client: pg.Client, migrations: readonly Migration[] = PG_MIGRATIONS): Promise<number[]> {
  checkVersions(migrations)
  const applied: number[] = []
  for (const m of migrations) {
    try {
      await client.query(`BEGIN; SET LOCAL statement_timeout = 0; SET LOCAL synchronous_commit = on;
        SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY});
        CREATE TABLE IF NOT EXISTS schema_migrations (
          version integer PRIMARY KEY,
          name text NOT NULL,
          applied_at timestamptz NOT NULL
        )`)
      const done = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version])
      if (done.rowCount === 0) {
        await client.query(m.sql)
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())', [m.version, m.name])
        applied.push(m.version)
      }
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    }
  }
  return applied
}
