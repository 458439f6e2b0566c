/*
 * Test helpers. Every store-facing test runs against every store the service ships (SQLite and
 * PostgreSQL), so the same behaviour is checked on both. The pattern, for a new or converted file:
 *
 *   import { STORES, buildTestApp } from '../helpers/app.js'
 *
 *   for (const store of STORES) {
 *     describe(`POST /v1/pets [${store}]`, () => {
 *       it('answers 201 …', async (t) => {
 *         const ta = await buildTestApp(t, { store })   // fresh database, one API key, closed at the end
 *         …
 *       })
 *     })
 *   }
 *
 * `buildTestApp(t)` without `store` is SQLite. For a test that needs a DATABASE_URL rather than an
 * app (CLI, server processes), `testDatabaseUrl(t, store)` gives a fresh database of any kind.
 * PostgreSQL comes from the one throwaway cluster `npm test` starts (scripts/run-tests.mjs) and
 * passes as PETSTORE_TEST_PG_URL; each call makes its own database there, dropped when the test ends.
 * `pgbouncer` is the same PostgreSQL reached through PgBouncer in transaction mode with its stock
 * startup-parameter policy (started by run-tests.mjs too, PETSTORE_TEST_PGBOUNCER_URL), as most
 * multi-instance deployments reach it.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import Database from 'better-sqlite3'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import type { Response } from 'light-my-request'
import pg from 'pg'
import { buildApp, type AppOptions } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config/index.js'
import { Metrics } from '../../src/observability/metrics.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import { checkResponse, MORE_FIELDS } from './conformance.js'
import { onCleanup } from './cleanup.js'

export type StoreKind = 'sqlite' | 'postgres' | 'pgbouncer'
/** The ways the tests reach PostgreSQL: directly, or through the pooler. */
export type PgRoute = Exclude<StoreKind, 'sqlite'>
const MISSING = (process.env.PETSTORE_TEST_MISSING ?? '').split(',')
/**
 * The routes to PostgreSQL the PostgreSQL suites take. One drops out only where scripts/run-tests.mjs
 * found no PostgreSQL (or no PgBouncer) on a developer machine (never under CI=true) and says so at
 * the end of the run.
 */
export const PG_ROUTES: readonly PgRoute[] = MISSING.includes('postgresql')
  ? []
  : MISSING.includes('pgbouncer') ? ['postgres'] : ['postgres', 'pgbouncer']
/** The stores every store-facing suite runs on: SQLite, and PostgreSQL by each route. */
export const STORES: readonly StoreKind[] = ['sqlite', ...PG_ROUTES]

export interface TestApp {
  app: FastifyInstance
  store: Store
  config: Readonly<Config>
  /** A valid key and the header that carries it. */
  key: string
  auth: { authorization: string }
  dir: string
  kind: StoreKind
  databaseUrl: string
  metrics: Metrics
}

/** A temporary directory removed when the test ends. */
export function tempDir (t: TestContext, prefix = 'petstore-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  onCleanup(t, () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

let admin: pg.Pool | undefined

/** The admin URL of the test cluster (user with CREATEDB, database postgres). */
export function testClusterUrl (): string {
  const url = process.env.PETSTORE_TEST_PG_URL
  if (url === undefined || url === '') {
    throw new Error('PETSTORE_TEST_PG_URL is not set: run the tests with `npm test`, which starts a PostgreSQL cluster for them')
  }
  return url
}

/** The PgBouncer in front of the test cluster (its admin URL with the pooler's port). */
export function testPoolerUrl (): string {
  const url = process.env.PETSTORE_TEST_PGBOUNCER_URL
  if (url === undefined || url === '') {
    throw new Error('PETSTORE_TEST_PGBOUNCER_URL is not set: run the tests with `npm test`, which starts PgBouncer for them (apt-get install pgbouncer)')
  }
  return url
}

function adminPool (): pg.Pool {
  admin ??= new pg.Pool({ connectionString: testClusterUrl(), max: 2, allowExitOnIdle: true })
  return admin
}

/**
 * A fresh, empty PostgreSQL database in the test cluster; its URL, direct or through PgBouncer
 * (`route`). Dropped (its connections closed by force) when the test ends, after whatever
 * `cleanup` the caller passes.
 */
export async function createTestDatabase (t: TestContext, cleanup?: () => Promise<unknown>, route: PgRoute = 'postgres'): Promise<string> {
  const name = `petstore_t_${process.pid}_${randomBytes(6).toString('hex')}`
  await adminPool().query(`CREATE DATABASE ${name}`)
  onCleanup(t, async () => {
    try {
      await cleanup?.()
    } finally {
      await adminPool().query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  })
  const url = new URL(route === 'pgbouncer' ? testPoolerUrl() : testClusterUrl())
  url.pathname = `/${name}`
  return url.href
}

/** Creates the database `name` on a cluster a test started itself; returns the URL of that database at `base` (the cluster's or a pooler's). */
export async function createDatabaseOn (clusterUrl: string, name: string, base: string = clusterUrl): Promise<string> {
  const admin = new pg.Client({ connectionString: clusterUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.href
}

/** A DATABASE_URL for a fresh database of the given kind (SQLite: a file in `dir`, or a new temp dir). */
export async function testDatabaseUrl (t: TestContext, store: StoreKind, dir?: string): Promise<string> {
  if (store !== 'sqlite') return await createTestDatabase(t, undefined, store)
  return `sqlite:${join(dir ?? tempDir(t), 'petstore.db')}`
}

/**
 * The app over a fresh database of the given kind (default SQLite, a real file in a temporary
 * directory), with one API key. Closed (store included) and removed when the test ends.
 */
export async function buildTestApp (t: TestContext, opts: {
  store?: StoreKind
  env?: Record<string, string>
  now?: () => number
  /** Another app's directory: this app then shares its SQLite file (a second instance). */
  dir?: string
  /** Another app: this app then shares its database, of either kind (a second instance). */
  sameDatabaseAs?: TestApp
  /** What the app is given instead of the store itself, e.g. the store instrumented to count its calls. */
  wrapStore?: (store: Store) => Store
} & Pick<AppOptions, 'logger' | 'pressureSampleIntervalMs'> = {}): Promise<TestApp> {
  const kind = opts.sameDatabaseAs?.kind ?? opts.store ?? 'sqlite'
  const dir = opts.sameDatabaseAs?.dir ?? opts.dir ?? tempDir(t)
  let app: FastifyInstance | undefined
  const databaseUrl = opts.sameDatabaseAs !== undefined
    ? opts.sameDatabaseAs.databaseUrl
    : kind !== 'sqlite'
      ? await createTestDatabase(t, async () => await app?.close(), kind)
      : `sqlite:${join(dir, 'petstore.db')}`
  // Overload shedding is off unless a test asks for it: a loaded CI machine must not shed test requests.
  // So is the per-address limit on failed authentication: suites that send hundreds of bad keys from
  // one address test authentication, not that limit (test/plugins/rate-limit.test.ts does).
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    EVENT_LOOP_MAX_DELAY_MS: '0',
    RATE_LIMIT_ANON_MAX: '0',
    ...opts.env
  }, dir)
  const store = await openStore(config)
  const metrics = new Metrics(store)
  app = await buildApp({
    config,
    store: opts.wrapStore?.(store) ?? store,
    metrics,
    ...(opts.now !== undefined ? { now: opts.now } : {}),
    ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
    ...(opts.pressureSampleIntervalMs !== undefined ? { pressureSampleIntervalMs: opts.pressureSampleIntervalMs } : {})
  })
  // A PostgreSQL app of its own is closed by its database's cleanup, just before the drop.
  if (kind === 'sqlite' || opts.sameDatabaseAs !== undefined) onCleanup(t, () => app?.close())
  checkEveryResponse(app)
  const { key } = await createApiKey(store, 'test')
  return { app, store, config, key, auth: { authorization: `Bearer ${key}` }, dir, kind, databaseUrl, metrics }
}

/** Creates a pet through the API and returns the parsed body. */
export async function createPet (ta: TestApp, body: Record<string, unknown>): Promise<{ id: number, name: string, categoryId: number, status: string }> {
  const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload: JSON.stringify(body) })
  if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

/** Asserts an Error answer: the status, the JSON media type, and the whole body, exactly. */
export function assertError (res: Response, status: number, code: string, message: string): void {
  const { details, ...body } = res.json() as { details?: Array<{ field: string, message: string }> }
  assert.deepEqual({ status: res.statusCode, body }, { status, body: { code, message, status } }, `${res.statusCode} ${res.body}`)
  // The field errors of a body, when sent, say what the message says, one by one (past the listed
  // ones, the message counts the rest).
  if (details !== undefined) assert.equal(details.map(d => d.message).join('; '), message.replace(MORE_FIELDS, ''), res.body)
  assert.match(String(res.headers['content-type']), /^application\/json/)
}

/** POSTs a raw body to /v1/pets (JSON content type unless given) with the app's key. */
export async function postPet (ta: TestApp, payload: string | Buffer, headers: Record<string, string> = {}): Promise<Response> {
  return ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json', ...headers }, payload })
}

type PetRow = { id: bigint, name: string, category_id: bigint, status: string }

/** Every pet in the store, read straight from the database (not through the API or store under test). */
export async function petsInDb (ta: TestApp): Promise<PetRow[]> {
  if (ta.kind !== 'sqlite') {
    const client = new pg.Client({ connectionString: ta.databaseUrl })
    await client.connect()
    try {
      const res = await client.query<{ id: string, name: Buffer, category_id: string, status: string }>('SELECT id, name, category_id, status FROM pets ORDER BY id')
      return res.rows.map(r => ({ id: BigInt(r.id), name: r.name.toString('utf8'), category_id: BigInt(r.category_id), status: r.status }))
    } finally {
      await client.end()
    }
  }
  const db = new Database(join(ta.dir, 'petstore.db'), { readonly: true })
  try {
    db.defaultSafeIntegers(true)
    return db.prepare('SELECT id, name, category_id, status FROM pets ORDER BY id').all() as PetRow[]
  } finally {
    db.close()
  }
}

/** Deletes a pet behind the service's back (the API has no delete), straight in the database. */
export async function deletePetInDb (ta: TestApp, id: number | bigint): Promise<void> {
  if (ta.kind !== 'sqlite') {
    const client = new pg.Client({ connectionString: ta.databaseUrl })
    await client.connect()
    try {
      await client.query('DELETE FROM pets WHERE id = $1', [String(id)])
    } finally {
      await client.end()
    }
    return
  }
  const db = new Database(join(ta.dir, 'petstore.db'))
  try {
    db.prepare('DELETE FROM pets WHERE id = ?').run(id)
  } finally {
    db.close()
  }
}

/**
 * Makes app.inject check every response against the committed OpenAPI document (see conformance.ts),
 * so each test that goes through the helper also proves the document right.
 */
export function checkEveryResponse (app: FastifyInstance): void {
  const inject = app.inject.bind(app) as (opts: InjectOptions | string) => Promise<LightMyRequestResponse>
  const checked = async (opts: InjectOptions | string): Promise<LightMyRequestResponse> => {
    const res = await inject(opts)
    const o = typeof opts === 'string' ? { url: opts } : opts
    const url = typeof o.url === 'string' ? o.url : String(o.path ?? '/')
    checkResponse({ method: (o.method ?? 'GET').toUpperCase(), url, status: res.statusCode, headers: res.headers, body: res.body })
    return res
  }
  app.inject = checked as typeof app.inject
}
