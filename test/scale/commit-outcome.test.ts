// requires: postgresql, pgbouncer
import assert from 'node:assert/strict'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { startCluster, type Cluster } from '../../scripts/pg-cluster.mjs'
import { startPgBouncer } from '../../scripts/pgbouncer.mjs'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { createDatabaseOn } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

/*
 * A 503 on a create says either "nothing was written" (service_unavailable) or "the outcome is
 * unknown" (outcome_unknown). Through PgBouncer in transaction mode, a frozen PostgreSQL (SIGSTOP of
 * the postmaster and every backend) reads a COMMIT queued in its socket once it is thawed, long after
 * the service answered: these tests check that such a create is never answered service_unavailable,
 * and that a retry with its Idempotency-Key resolves it into exactly one pet.
 */

const UNAVAILABLE = { code: 'service_unavailable', message: 'the store is unavailable; retry later', status: 503 }
const UNKNOWN = { code: 'outcome_unknown', message: 'the store did not confirm the write: it may or may not have been made; retry with the same Idempotency-Key', status: 503 }

/** The simple-protocol message pg sends for client.query('COMMIT'). */
const COMMIT_MESSAGE = Buffer.concat([Buffer.from([0x51, 0, 0, 0, 11]), Buffer.from('COMMIT\0')])
const RECORD_INSERT = Buffer.from('INSERT INTO idempotency_keys')

/**
 * A TCP relay in front of the database (or the pooler). Once armed, the first COMMIT sent on a
 * connection that has written an idempotency record (a keyed create's batch, nothing else) is
 * relayed, and nothing the database sends on that connection afterwards reaches the service: the
 * commit happens and its answer is lost, as when the network or a stalled host drops it.
 */
async function commitRelay (t: TestContext, upstreamPort: number): Promise<{ port: number, arm: () => void, held: () => boolean }> {
  let armed = false
  let held = false
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const upstream = connect(upstreamPort, '127.0.0.1')
    sockets.add(client).add(upstream)
    let wroteRecord = false
    let swallow = false
    client.on('data', (chunk: Buffer) => {
      if (chunk.includes(RECORD_INSERT)) wroteRecord = true
      if (armed && wroteRecord && chunk.includes(COMMIT_MESSAGE)) {
        armed = false
        held = true
        swallow = true
      }
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => { if (!swallow) client.write(chunk) })
    client.on('close', () => upstream.end())
    upstream.on('close', () => client.destroy())
    client.on('error', () => {})
    upstream.on('error', () => {})
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onCleanup(t, async () => {
    for (const s of sockets) s.destroy()
    await new Promise(resolve => server.close(resolve))
  })
  return { port: (server.address() as { port: number }).port, arm: () => { armed = true }, held: () => held }
}

interface Setup { cluster: Cluster, apps: FastifyInstance[], headers: Record<string, string>, db: pg.Client }

/**
 * A PostgreSQL cluster of its own (frozen by the tests), a PgBouncer in transaction mode in front
 * (query_wait_timeout 1 s, below the client's bound of PG_STATEMENT_TIMEOUT_MS + 1 s), optionally
 * the relay in front of that, and `instances` apps over it; `db` reads the database directly.
 */
async function setUp (t: TestContext, instances: number, relay?: (upstreamPort: number) => Promise<number>, pooler = true): Promise<Setup> {
  const cluster = await startCluster({ maxConnections: 60 })
  onCleanup(t, () => cluster.destroy())
  let frozen = false
  const signal = cluster.signal
  cluster.signal = (sig: NodeJS.Signals) => { signal(sig); frozen = sig === 'SIGSTOP' }
  // Thawed before anything else is cleaned up.
  const bouncer = pooler ? await startPgBouncer(cluster.url, { server_login_retry: 1, query_wait_timeout: 1 }) : undefined
  if (bouncer !== undefined) onCleanup(t, () => bouncer.destroy())
  const url = new URL(await createDatabaseOn(cluster.url, 'outcome', bouncer?.url))
  if (relay !== undefined) url.port = String(await relay(bouncer?.port ?? cluster.port))
  const config = loadConfig({ DATABASE_URL: url.href, PG_CONNECT_TIMEOUT_MS: '500', PG_STATEMENT_TIMEOUT_MS: '500', RATE_LIMIT_MAX: '0' })
  const apps: FastifyInstance[] = []
  let key = ''
  for (let i = 0; i < instances; i++) {
    const store = await openStore(config)
    const app = await buildApp({ config, store })
    onCleanup(t, () => app.close())
    apps.push(app)
    if (i === 0) key = (await createApiKey(store, 'outcome')).key
  }
  const direct = new URL(cluster.url)
  direct.pathname = '/outcome'
  const db = new pg.Client({ connectionString: direct.href })
  onCleanup(t, async () => { await db.end() })
  onCleanup(t, () => { if (frozen) cluster.signal('SIGCONT') })
  await db.connect()
  return { cluster, apps, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, db }
}

const create = async (app: FastifyInstance, headers: Record<string, string>, key: string) =>
  await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...headers, 'idempotency-key': key }, payload: JSON.stringify({ name: key, categoryId: 1 }) })

/** How many pets, and how many idempotency records, carry this name / key. */
async function stored (db: pg.Client, key: string): Promise<{ pets: number, records: number }> {
  const res = await db.query<{ pets: string, records: string }>(
    "SELECT (SELECT count(*) FROM pets WHERE name = convert_to($1, 'UTF8')) AS pets, (SELECT count(*) FROM idempotency_keys WHERE key = $1) AS records", [key])
  return { pets: Number(res.rows[0]!.pets), records: Number(res.rows[0]!.records) }
}

/** Retries a keyed create until it is answered 201 (the database is back); at most 30 s of 503s. */
async function retryUntilCreated (app: FastifyInstance, headers: Record<string, string>, key: string) {
  for (let waited = 0; ; waited += 100) {
    const res = await create(app, headers, key)
    if (res.statusCode !== 503 || waited > 30000) return res
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

describe('a create whose COMMIT PostgreSQL did not confirm', () => {
  for (const pooler of [false, true]) {
    it(`is answered outcome_unknown when the answer to its COMMIT is lost${pooler ? ' (through PgBouncer)' : ''}; it was written, and its retry with the key replays that one pet`, async (t) => {
      let relay: Awaited<ReturnType<typeof commitRelay>> | undefined
      const { apps: [app], headers, db } = await setUp(t, 1, async (port) => { relay = await commitRelay(t, port); return relay.port }, pooler)
      relay!.arm()
      const res = await create(app!, headers, 'answer-lost')
      assert.ok(relay!.held(), 'the COMMIT went through the relay')
      assert.deepEqual({ status: res.statusCode, body: res.json() }, { status: 503, body: UNKNOWN })
      assert.equal(res.headers['retry-after'], '1')
      // The database did commit it: a "nothing was written" answer would have been false.
      assert.deepEqual(await stored(db, 'answer-lost'), { pets: 1, records: 1 })
      const retry = await retryUntilCreated(app!, headers, 'answer-lost')
      assert.equal(retry.statusCode, 201)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
      assert.deepEqual(await stored(db, 'answer-lost'), { pets: 1, records: 1 })
    })
  }

  it('through PgBouncer, across freezes under keyed load on three instances: no service_unavailable create is ever written, and every outcome_unknown one resolves into exactly one pet', async (t) => {
    const { cluster, apps, headers, db } = await setUp(t, 3)
    // Every commit waits 100 ms between writing its record and flushing it (commit_delay, with no
    // sibling needed): a freeze then often catches a COMMIT that the server has read and will finish
    // once thawed, whatever the service answered meanwhile.
    await db.query('ALTER SYSTEM SET commit_delay = 100000')
    await db.query('ALTER SYSTEM SET commit_siblings = 0')
    await db.query('SELECT pg_reload_conf()')
    const answers: Array<{ key: string, status: number, body: { code?: string } }> = []
    let running = true
    let n = 0
    const load = Promise.all(apps.flatMap((app, a) => Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; running; i++) {
        const key = `load-${a}-${w}-${i}`
        const res = await create(app, headers, key)
        answers.push({ key, status: res.statusCode, body: res.json() })
        n++
        if (res.statusCode !== 201) await new Promise(resolve => setTimeout(resolve, 10))
      }
    })))
    const until = async (what: string, cond: () => boolean) => {
      for (let waited = 0; !cond(); waited += 20) {
        if (waited > 60000) throw new Error(`gave up waiting for ${what}`)
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    }
    try {
      for (let round = 0; round < 4; round++) {
        const before = answers.filter(a => a.status === 201).length
        await until('201s before the freeze', () => answers.filter(a => a.status === 201).length >= before + 20)
        cluster.signal('SIGSTOP')
        const frozenAt = n
        // Every create caught by the freeze has been answered (after the client's bound), and more since.
        await until('answers while frozen', () => answers.slice(frozenAt).filter(a => a.status === 503).length >= 12)
        await new Promise(resolve => setTimeout(resolve, 1000))
        cluster.signal('SIGCONT')
      }
      const after = answers.length
      await until('201s after the last thaw', () => answers.slice(after).filter(a => a.status === 201).length >= 20)
    } finally {
      running = false
      await load
    }

    assert.deepEqual([...new Set(answers.map(a => a.status))].sort(), [201, 503], 'only 201s and 503 Errors')
    const unavailable = answers.filter(a => a.status === 503 && a.body.code === 'service_unavailable')
    const unknown = answers.filter(a => a.status === 503 && a.body.code === 'outcome_unknown')
    assert.equal(unavailable.length + unknown.length, answers.filter(a => a.status === 503).length, 'every 503 is one of the two codes')
    for (const a of unavailable) assert.deepEqual(a.body, UNAVAILABLE)
    for (const a of unknown) assert.deepEqual(a.body, UNKNOWN)
    // The database has settled: no transaction of the service is still open.
    for (let waited = 0; ; waited += 100) {
      const open = await db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = 'outcome' AND state <> 'idle' AND pid <> pg_backend_pid()")
      if (open.rows[0].n === 0) break
      if (waited > 15000) assert.fail('transactions still open 15 s after the load stopped')
      await new Promise(resolve => setTimeout(resolve, 100))
    }
    const written = await db.query<{ key: string }>('SELECT key FROM idempotency_keys WHERE key = ANY($1::text[])', [unavailable.map(a => a.key)])
    assert.deepEqual(written.rows.map(r => r.key), [], 'a create answered service_unavailable was written')
    const pets = await db.query<{ name: string }>("SELECT convert_from(name, 'UTF8') AS name FROM pets WHERE convert_from(name, 'UTF8') = ANY($1::text[])", [unavailable.map(a => a.key)])
    assert.deepEqual(pets.rows.map(r => r.name), [])
    for (const a of unknown) {
      const retry = await retryUntilCreated(apps[0]!, headers, a.key)
      assert.equal(retry.statusCode, 201, `retry of ${a.key}`)
      assert.deepEqual(await stored(db, a.key), { pets: 1, records: 1 }, a.key)
    }
    t.diagnostic(`${answers.length} creates: ${answers.filter(a => a.status === 201).length} × 201, ${unavailable.length} × service_unavailable (none written), ${unknown.length} × outcome_unknown (each resolved by a retry into one pet)`)
  })
})
