// requires: postgresql, pgbouncer
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import pg from 'pg'
import { loadConfig } from '../../src/config/index.js'
import { StoreUnavailableError } from '../../src/errors.js'
import { migrateStore, openStore } from '../../src/store/index.js'
import { PgDatabase } from '../../src/store/postgres/connection.js'
import { PET_INSERT_LOCK_KEY } from '../../src/store/postgres/index.js'
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js'
import { namesStatements } from '../../src/store/store.js'
import { PG_ROUTES, createTestDatabase, testClusterUrl } from '../helpers/app.js'
import { startPgBouncer, type PgBouncer } from '../../scripts/pgbouncer.mjs'
import { onCleanup } from '../helpers/cleanup.js'
import { freePort } from '../helpers/server.js'

/** A PgBouncer of the test's own (transaction mode, stock startup-parameter policy) with `settings`. */
async function ownPgBouncer (t: TestContext, settings: Record<string, string | number> = {}): Promise<PgBouncer> {
  const b = await startPgBouncer(testClusterUrl(), settings)
  onCleanup(t, async () => await b.destroy())
  return b
}

/** `url` with another host:port (the database, user and password kept). */
function via (url: string, through: string): string {
  const u = new URL(url)
  const o = new URL(through)
  u.host = o.host
  return u.href
}

/** Admin SQL on the test cluster, directly. */
async function adminQuery<R extends pg.QueryResultRow> (url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<R>(text, values)).rows
  } finally {
    await client.end()
  }
}

function pgOptions (url: string, over: Partial<ConstructorParameters<typeof PgDatabase>[0]> = {}): ConstructorParameters<typeof PgDatabase>[0] {
  return { url, pgPoolMax: 2, pgStatementTimeoutMs: 5000, pgConnectTimeoutMs: 2000, pgPreparedStatements: 'off', ...over }
}

/**
 * A test database (reached through `route`) whose defaults are ones a careless role or database
 * could carry, which the service must not depend on; `direct` reaches it without the pooler.
 */
async function databaseWithCarelessDefaults (t: TestContext, route: typeof PG_ROUTES[number], settings: string[]): Promise<{ url: string, direct: string }> {
  const url = await createTestDatabase(t, undefined, route)
  const direct = via(url, testClusterUrl())
  const name = new URL(url).pathname.slice(1)
  for (const setting of settings) await adminQuery(direct, `ALTER DATABASE ${name} SET ${setting}`)
  return { url, direct }
}

/**
 * On a database whose defaults are synchronous_commit=off and lock_timeout=0, a pet insert, with or
 * without an Idempotency-Key, still runs with synchronous_commit on and lock_timeout =
 * PG_STATEMENT_TIMEOUT_MS, as a trigger inside its own transaction sees them, and leaves the
 * session's defaults as they were.
 */
async function insertSeesSettings (t: TestContext, route: typeof PG_ROUTES[number], prepared: 'on' | 'off'): Promise<void> {
  const { url, direct } = await databaseWithCarelessDefaults(t, route, ['synchronous_commit = off', 'lock_timeout = 0'])
  const store = await openStore(loadConfig({ DATABASE_URL: url, PG_STATEMENT_TIMEOUT_MS: '1234', PG_PREPARED_STATEMENTS: prepared }))
  onCleanup(t, async () => await store.close())
  await adminQuery(direct, `
    CREATE TABLE seen (sc text, t text);
    CREATE FUNCTION note_settings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO seen VALUES (current_setting('synchronous_commit'), current_setting('lock_timeout')); RETURN NULL; END $$;
    CREATE TRIGGER note_settings AFTER INSERT ON pets FOR EACH STATEMENT EXECUTE FUNCTION note_settings();`)
  await store.createPet({ name: 'durable', categoryId: 1n, status: 'available' })
  const { id: apiKeyId } = await store.createApiKey({ name: 'k', hash: 'h'.repeat(64), createdAt: new Date() })
  const now = new Date()
  const keyed = await store.createPetIdempotent({ name: 'keyed', categoryId: 1n, status: 'available' }, { apiKeyId, key: 'k1', fingerprint: 'f', now, expiredBefore: new Date(now.getTime() - 1000) })
  assert.equal(keyed.outcome, 'created')
  assert.deepEqual(await adminQuery(direct, 'SELECT sc, t FROM seen'), [{ sc: 'on', t: '1234ms' }, { sc: 'on', t: '1234ms' }])
  const outside = await adminQuery<{ sc: string, t: string }>(url, "SELECT current_setting('synchronous_commit') AS sc, current_setting('lock_timeout') AS t")
  assert.deepEqual(outside[0], { sc: 'off', t: '0' }, 'the server defaults this test overrides')
}

/**
 * A create that waits for the insert lock (held by another session) longer than
 * PG_STATEMENT_TIMEOUT_MS is cut by the server with SQLSTATE `code` (503, nothing written), and the
 * next create, once the lock is free, is the only pet.
 */
async function lockWaitIsCut (t: TestContext, route: typeof PG_ROUTES[number], prepared: 'on' | 'off'): Promise<void> {
  const url = await createTestDatabase(t, undefined, route)
  const store = await openStore(loadConfig({ DATABASE_URL: url, PG_STATEMENT_TIMEOUT_MS: '300', PG_PREPARED_STATEMENTS: prepared }))
  const other = new pg.Client({ connectionString: via(url, testClusterUrl()) })
  await other.connect()
  try {
    await other.query('BEGIN')
    await other.query('SELECT pg_advisory_xact_lock($1::int8)', [PET_INSERT_LOCK_KEY.toString()])
    const err = await store.createPet({ name: 'late', categoryId: 1n, status: 'available' }).then(() => undefined, (e: unknown) => e)
    assert.ok(err instanceof StoreUnavailableError, String(err))
    // 55P03 lock_not_available: the server gave up the wait (not the client's later, coarser bound).
    assert.equal((err.cause as { code?: string }).code, '55P03')
    await other.query('ROLLBACK')
    assert.equal((await store.createPet({ name: 'after', categoryId: 1n, status: 'available' })).name, 'after')
    assert.deepEqual((await store.listPets({ afterId: null, limit: 10, status: undefined })).map(p => p.name), ['after'])
  } finally {
    await other.end()
    await store.close()
  }
}

for (const route of PG_ROUTES) {
  describe(`PostgreSQL store [${route}]`, () => {
    it('runs every write transaction with synchronous_commit on and its timeouts, whatever the server defaults', async (t) => {
      const { url } = await databaseWithCarelessDefaults(t, route, ['synchronous_commit = off', 'statement_timeout = 0'])
      const db = new PgDatabase(pgOptions(url, { pgStatementTimeoutMs: 1234 }))
      onCleanup(t, async () => await db.end())
      const sql = "SELECT current_setting('synchronous_commit') AS sc, current_setting('statement_timeout') AS st, current_setting('idle_in_transaction_session_timeout') AS idle, 9007199254740993::int8 AS n"
      const outside = await db.query<{ sc: string, st: string }>({ text: sql })
      assert.deepEqual([outside.rows[0]!.sc, outside.rows[0]!.st], ['off', '0'], 'the server defaults this test overrides')
      const [inside] = await db.transaction([{ text: sql }])
      assert.deepEqual(inside!.rows[0], { sc: 'on', st: '1234ms', idle: '2234ms', n: 9007199254740993n })
    })

    it('unnamed, commits every pet insert with synchronous_commit on and its lock_timeout, whatever the server defaults', async (t) => {
      await insertSeesSettings(t, route, 'off')
    })

    it('unnamed, cuts a create that waits too long for the insert lock with the server lock_timeout, writing nothing', async (t) => {
      await lockWaitIsCut(t, route, 'off')
    })

    it('upgrades a database made by the released migrations 1–2 and keeps its pets, ids and order, and its keys with every scope', async (t) => {
      const url = await createTestDatabase(t, undefined, route)
      const direct = via(url, testClusterUrl())
      // The database as the previous release left it: migrations 1 and 2 applied, pets inserted.
      await adminQuery(direct, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL);
        ${PG_MIGRATIONS[0]!.sql} ${PG_MIGRATIONS[1]!.sql}
        INSERT INTO schema_migrations VALUES (1, '${PG_MIGRATIONS[0]!.name}', now()), (2, '${PG_MIGRATIONS[1]!.name}', now());
        INSERT INTO pets (name, category_id, status) VALUES ('\\x6f6c64'::bytea, 9223372036854775807, 'sold');
        INSERT INTO api_keys (name, key_hash, created_at) VALUES ('old', '${'ab'.repeat(32)}', now());`)
      // Creates through the insert function migration 3 brings (unnamed statements, as behind a pooler).
      const config = loadConfig({ DATABASE_URL: url, PG_PREPARED_STATEMENTS: 'off' })
      assert.deepEqual(await migrateStore(config), [3, 4])
      assert.deepEqual(await migrateStore(config), [])
      const store = await openStore(config)
      onCleanup(t, async () => await store.close())
      const made = await Promise.all(['a', "b'); DROP TABLE pets; --", 'c\\x00', '\u0000"\\'].map(async name => await store.createPet({ name, categoryId: -9223372036854775808n, status: 'pending' })))
      const walk = await store.listPets({ afterId: null, limit: 10, status: undefined })
      assert.deepEqual(walk.map(p => [p.name, p.categoryId]), [['old', 9223372036854775807n], ...made.sort((x, y) => (x.id < y.id ? -1 : 1)).map(p => [p.name, -9223372036854775808n])])
      assert.deepEqual(walk.map(p => p.id), [1n, 2n, 3n, 4n, 5n])
      const versions = await adminQuery<{ version: number }>(direct, 'SELECT version FROM schema_migrations ORDER BY version')
      assert.deepEqual(versions.map(v => v.version), [1, 2, 3, 4])
      // Keys made before scopes keep what they could do.
      assert.deepEqual(await store.findApiKeyByHash('ab'.repeat(32)), { id: 1, scopes: ['pets:read', 'pets:write'], expiresAt: null, revokedAt: null })
    })

    it('makes a create wait while another instance holds ids it has not committed yet', async (t) => {
      // The other instance's insert, caught mid-transaction: it holds the insert lock and an id.
      const url = await createTestDatabase(t, undefined, route)
      const store = await openStore(loadConfig({ DATABASE_URL: url }))
      const other = new pg.Client({ connectionString: via(url, testClusterUrl()) })
      await other.connect()
      try {
        await other.query('BEGIN')
        await other.query('SELECT pg_advisory_xact_lock($1::int8)', [PET_INSERT_LOCK_KEY.toString()])
        const held = await other.query<{ id: string }>("INSERT INTO pets (name, category_id, status) VALUES ('\\x6f6c64'::bytea, 1, 'available') RETURNING id")
        let settled = false
        const creating = store.createPet({ name: 'new', categoryId: 2n, status: 'available' }).finally(() => { settled = true })
        // Wait until the create is queued behind the lock (seen by the server), or has wrongly finished.
        for (;;) {
          const waiting = await other.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
          if (waiting.rows[0].n > 0 || settled) break
          await new Promise(resolve => setTimeout(resolve, 20))
        }
        assert.equal(settled, false, 'a create finished while a lower id was still uncommitted')
        assert.deepEqual(await store.listPets({ afterId: null, limit: 10, status: undefined }), [])
        await other.query('COMMIT')
        const pet = await creating
        assert.equal(pet.id, BigInt(held.rows[0]!.id) + 1n)
        const walk = await store.listPets({ afterId: null, limit: 10, status: undefined })
        assert.deepEqual(walk.map(p => [p.id, p.name]), [[pet.id - 1n, 'old'], [pet.id, 'new']])
      } finally {
        await other.end()
        await store.close()
      }
    })

    it('leaves no advisory lock held once migrations ran, however many ran at once', async (t) => {
      const url = await createTestDatabase(t, undefined, route)
      const stores = await Promise.all([1, 2, 3].map(async () => await openStore(loadConfig({ DATABASE_URL: url }))))
      try {
        // This test's database only: other tests' databases in the cluster take the insert lock meanwhile.
        const locks = await adminQuery<{ n: number }>(testClusterUrl(),
          "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = $1)",
          [new URL(url).pathname.slice(1)])
        assert.equal(locks[0]!.n, 0)
      } finally {
        await Promise.all(stores.map(async s => await s.close()))
      }
    })
  })
}

describe('PostgreSQL store with named statements (direct connection)', () => {
  it('named, commits every pet insert with synchronous_commit on and its lock_timeout, whatever the server defaults', async (t) => {
    await insertSeesSettings(t, 'postgres', 'on')
  })

  it('named, cuts a create that waits too long for the insert lock with the server lock_timeout, writing nothing', async (t) => {
    await lockWaitIsCut(t, 'postgres', 'on')
  })
})

describe('PostgreSQL store through a transaction-mode pooler', () => {
  it('is refused by the pooler for a startup parameter, and says which setting to look at', async (t) => {
    const url = await createTestDatabase(t, undefined, 'pgbouncer')
    const u = new URL(url)
    u.searchParams.set('options', '-c statement_timeout=1000')
    const err = await openStore(loadConfig({ DATABASE_URL: u.href })).then(() => undefined, (e: unknown) => e)
    assert.ok(err instanceof StoreUnavailableError, String(err))
    assert.match(err.message, /^PostgreSQL at 127\.0\.0\.1:\d+ \(database "petstore_t_\w+", user "postgres"\): FATAL 08P01 unsupported startup parameter: options; check the pooler's ignore_startup_parameters/)
  })

  it('shares one server connection between instances with PG_PREPARED_STATEMENTS off, and fails there with on', async (t) => {
    // One server connection for everyone: a statement one instance prepares is there for the next.
    const bouncer = await ownPgBouncer(t, { default_pool_size: 1 })
    const url = via(await createTestDatabase(t), bouncer.url)
    const open = async (prepared: string) => await Promise.all([1, 2].map(async () =>
      await openStore(loadConfig({ DATABASE_URL: url, PG_PREPARED_STATEMENTS: prepared }))))
    const reads = async (stores: Array<Awaited<ReturnType<typeof openStore>>>) =>
      await Promise.allSettled(stores.map(async s => await s.getPet(1n)))

    const safe = await open('off')
    try {
      assert.deepEqual((await reads(safe)).map(r => r.status), ['fulfilled', 'fulfilled'])
    } finally {
      await Promise.all(safe.map(async s => await s.close()))
    }
    // The failure the setting exists for: with named statements, the second instance's PREPARE
    // meets the first's on the shared server connection.
    const named = await open('on')
    try {
      const outcome = await reads(named)
      const failed = outcome.find(r => r.status === 'rejected') as PromiseRejectedResult | undefined
      assert.match(String(failed?.reason?.message), /prepared statement "get_pet_[0-9a-f]{12}" already exists/)
    } finally {
      await Promise.all(named.map(async s => await s.close()))
    }
  })

  it('with PG_PREPARED_STATEMENTS=auto, names primary-key reads on a direct connection', async (t) => {
    const url = await createTestDatabase(t)
    const db = new PgDatabase(pgOptions(url, { pgPoolMax: 1, pgPreparedStatements: 'auto' }))
    onCleanup(t, async () => await db.end())
    const read = { name: 'get_one', stablePlan: true, text: 'SELECT $1::int8 AS n', values: ['7'] }
    assert.deepEqual((await db.query(read)).rows, [{ n: 7n }])
    assert.deepEqual((await db.query(read)).rows, [{ n: 7n }])
    // The one connection of the pool holds the statement, named after its text's hash.
    const held = await db.query<{ name: string }>({ text: 'SELECT name FROM pg_prepared_statements' })
    assert.deepEqual(held.rows.map(r => r.name.replace(/_[0-9a-f]{12}$/, '_HASH')), ['get_one_HASH'])
    assert.equal(db.namedReads, true)
    // A read whose best plan depends on the value is never named in auto mode.
    await db.query({ name: 'by_value', text: 'SELECT $1::text AS s', values: ['x'] })
    assert.equal((await db.query({ text: 'SELECT count(*) AS n FROM pg_prepared_statements' })).rows[0]!.n, 1n)
  })

  it('with PG_PREPARED_STATEMENTS=auto, stops naming statements once a transaction-mode pooler shows, and every read succeeds', async (t) => {
    // One server connection for everyone, as in the test above where `on` fails.
    const bouncer = await ownPgBouncer(t, { default_pool_size: 1 })
    const url = via(await createTestDatabase(t), bouncer.url)
    const dbs = [1, 2].map(() => new PgDatabase(pgOptions(url, { pgPoolMax: 2, pgPreparedStatements: 'auto' })))
    onCleanup(t, async () => await Promise.all(dbs.map(async db => await db.end())))
    for (let round = 0; round < 5; round++) {
      const reads = await Promise.all(dbs.flatMap(db => [1, 2].map(async (i) =>
        (await db.query<{ n: bigint }>({ name: 'get_one', stablePlan: true, text: 'SELECT $1::int8 AS n', values: [String(round * 10 + i)] })).rows[0]!.n)))
      assert.deepEqual(reads, [1n, 2n, 1n, 2n].map(n => BigInt(round * 10) + n))
    }
    // The second client's PREPARE met the first's on the shared server connection: that one fell
    // back, and the first stops as soon as its statement is missing on the connection it is given.
    assert.ok(dbs.some(db => !db.namedReads))
  })

  it('with PG_PREPARED_STATEMENTS=auto, names the pet insert until the pooler shows, then sends it unnamed: every create succeeds, in id order', async (t) => {
    const bouncer = await ownPgBouncer(t, { default_pool_size: 1 })
    const url = via(await createTestDatabase(t), bouncer.url)
    const stores = await Promise.all([1, 2].map(async () => await openStore(loadConfig({ DATABASE_URL: url, PG_PREPARED_STATEMENTS: 'auto' }))))
    onCleanup(t, async () => await Promise.all(stores.map(async s => await s.close())))
    const told: unknown[] = []
    const naming = stores.filter(namesStatements)
    assert.equal(naming.length, 2)
    for (const s of naming) s.onNamingStopped((e) => told.push(e))
    assert.deepEqual(naming.map(s => s.namedStatements()), [true, true])
    const ids: bigint[] = []
    for (let round = 0; round < 4; round++) {
      for (const s of stores) ids.push((await s.createPet({ name: `p${round}`, categoryId: 1n, status: 'available' })).id)
    }
    assert.deepEqual(ids, [...ids].sort((a, b) => (a < b ? -1 : 1)))
    assert.equal((await stores[0]!.listPets({ afterId: null, limit: 100, status: undefined })).length, 8)
    // Only creates ran: the second store's named insert met the first's on the one server connection.
    assert.ok(naming.some(s => !s.namedStatements()), 'no store stopped naming its insert')
    assert.equal(told.length, naming.filter(s => !s.namedStatements()).length)
    assert.match(JSON.stringify(told[0]), /"code":"(42P05|26000)","serverMessage":"prepared statement \\"insert_pets_[0-9a-f]{12}\\" (already exists|does not exist)"/)
  })

  it('names the authentication failure, the user and the setting, never the password', async (t) => {
    const bouncer = await ownPgBouncer(t, { auth_type: 'plain' })
    const u = new URL(via(await createTestDatabase(t), bouncer.url))
    u.password = 'not-the-password-9f3a'
    const err = await openStore(loadConfig({ DATABASE_URL: u.href })).then(() => undefined, (e: unknown) => e)
    assert.ok(err instanceof StoreUnavailableError, String(err))
    assert.match(err.message, /^PostgreSQL at 127\.0\.0\.1:\d+ \(database "\w+", user "postgres"\): FATAL 08P01 password authentication failed; check the user and password in DATABASE_URL/)
    assert.doesNotMatch(err.message, /not-the-password/)
  })
})

describe('PostgreSQL store start failures', () => {
  it('answers StoreUnavailableError, promptly, naming host, port and cause, when nothing listens at the URL', async () => {
    const port = await freePort()
    const err = await openStore(loadConfig({ DATABASE_URL: `postgres://app:s3cret-pw@127.0.0.1:${port}/x` })).then(() => undefined, (e: unknown) => e)
    assert.ok(err instanceof StoreUnavailableError, String(err))
    assert.equal(err.message, `PostgreSQL at 127.0.0.1:${port} (database "x", user "app"): connection refused (ECONNREFUSED); check the host and port in DATABASE_URL, and that PostgreSQL (or the pooler) is running there`)
  })

  it('answers StoreUnavailableError naming PG_CONNECT_TIMEOUT_MS when the server accepts but never answers', async (t) => {
    // A listener that never speaks PostgreSQL: only the connect timeout can end the wait.
    const silent = createServer(() => {})
    await new Promise<void>(resolve => silent.listen(0, '127.0.0.1', resolve))
    onCleanup(t, () => { silent.close() })
    const { port } = silent.address() as { port: number }
    const config = loadConfig({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x`, PG_CONNECT_TIMEOUT_MS: '300' })
    const err = await openStore(config).then(() => undefined, (e: unknown) => e)
    assert.ok(err instanceof StoreUnavailableError, String(err))
    assert.match(err.message, new RegExp(`^PostgreSQL at 127\\.0\\.0\\.1:${port} \\(database "x", user "postgres"\\): no answer within PG_CONNECT_TIMEOUT_MS \\(300 ms\\); check `))
  })

  it('names a database that does not exist', async () => {
    const url = new URL(testClusterUrl())
    url.pathname = '/no_such_database_here'
    const err = await openStore(loadConfig({ DATABASE_URL: url.href })).then(() => undefined, (e: unknown) => e)
    assert.ok(err instanceof StoreUnavailableError, String(err))
    assert.match(err.message, /: FATAL 3D000 database "no_such_database_here" does not exist; check the database name in DATABASE_URL/)
  })
})
