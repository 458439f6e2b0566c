import type pg from 'pg'
import { checkVersions, type Migration } from '../migrations.js'

/**
 * Schema migrations for PostgreSQL, in order. Frozen once released: never edit one, add the next.
 * Versions and names match SQLITE_MIGRATIONS one for one (a test holds them together), so
 * `schema_migrations` reads the same on both stores.
 *
 * Names are bytea (their UTF-8 bytes): PostgreSQL text cannot hold U+0000, which the API accepts
 * in a name and SQLite keeps, and both stores must return a name exactly as it was sent.
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
  },
  {
    version: 3,
    name: 'pet insert function',
    // Every pet insert calls it (insertPets in index.ts, where the ordering argument is written).
    // PL/pgSQL keeps the statement's plan per server connection, so it is planned once per
    // connection whatever pooler is in between, and the call is one short statement. One statement inside (one executor run, measured cheaper than a separate PERFORM of
    // the lock): the lock in a MATERIALIZED CTE joined into the insert's source, sorted by `ord`; the
    // Sort consumes all its input, the lock included, before it emits a row, and the volatile id
    // default is evaluated above the Sort, so ids are drawn only under the lock, in the batch's order.
    // An array back, not SETOF: RETURN QUERY over an INSERT needs PostgreSQL 14, SELECT … INTO does not.
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
    // Keys made before scopes keep what they could do: both scopes (the catalogue in schemas/scopes.ts).
    // revoked_at may now be in the future: a scheduled revocation, the key works until then. A
    // constant default: PostgreSQL 11+ adds the column without rewriting the table.
    sql: `
      ALTER TABLE api_keys
        ADD COLUMN scopes text NOT NULL DEFAULT 'pets:read pets:write',
        ADD COLUMN expires_at timestamptz;
    `
  }
]

/** Transaction advisory lock each migration takes, so N instances starting at once apply each once. */
export const MIGRATION_LOCK_KEY = 7_365_020_100_000_001n

/**
 * Applies the migrations not yet applied (migrations.ts) and returns their versions. Each runs in a
 * transaction of its own that first takes a transaction-level advisory lock, then checks whether
 * the migration is already applied: nothing is held between transactions, so this is safe through
 * a transaction-mode pooler (where a session lock could be taken on one server connection and
 * never released), and a migrator that dies mid-way holds nothing.
 */
export async function migratePostgres (client: pg.Client, migrations: readonly Migration[] = PG_MIGRATIONS): Promise<number[]> {
  checkVersions(migrations)
  const applied: number[] = []
  for (const m of migrations) {
    await client.query('BEGIN')
    try {
      // Waiting for another migrator's lock may take long: no statement timeout here.
      await client.query('SET LOCAL statement_timeout = 0')
      await client.query('SET LOCAL synchronous_commit = on')
      await client.query('SELECT pg_advisory_xact_lock($1::int8)', [MIGRATION_LOCK_KEY.toString()])
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
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
