import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import Database from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import type { Response } from 'light-my-request'
import { buildApp, type AppOptions } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { Metrics } from '../../src/plugins/metrics.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'

export interface TestApp {
  app: FastifyInstance
  store: Store
  config: Readonly<Config>
  /** A valid key and the header that carries it. */
  key: string
  auth: { authorization: string }
  dir: string
  metrics: Metrics
}

/** A temporary directory removed when the test ends. */
export function tempDir (t: TestContext, prefix = 'petstore-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * The app over a real SQLite file in a fresh temporary directory, with one API key.
 * Closed (store included) and removed when the test ends.
 */
export async function buildTestApp (t: TestContext, opts: {
  env?: Record<string, string>
  now?: () => number
  /** Another app's directory: this app then shares its database file (a second instance). */
  dir?: string
} & Pick<AppOptions, 'logger' | 'pressureSampleIntervalMs'> = {}): Promise<TestApp> {
  const dir = opts.dir ?? tempDir(t)
  // Overload shedding is off unless a test asks for it: a loaded CI machine must not shed test requests.
  // So is the per-address limit on failed authentication: suites that send hundreds of bad keys from
  // one address test authentication, not that limit (test/plugins/rate-limit.test.ts does).
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
    EVENT_LOOP_MAX_DELAY_MS: '0',
    RATE_LIMIT_ANON_MAX: '0',
    ...opts.env
  }, dir)
  const store = await openStore(config)
  const metrics = new Metrics(store)
  const app = await buildApp({
    config,
    store,
    metrics,
    ...(opts.now !== undefined ? { now: opts.now } : {}),
    ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
    ...(opts.pressureSampleIntervalMs !== undefined ? { pressureSampleIntervalMs: opts.pressureSampleIntervalMs } : {})
  })
  t.after(() => app.close())
  const { key } = await createApiKey(store, 'test')
  return { app, store, config, key, auth: { authorization: `Bearer ${key}` }, dir, metrics }
}

/** Creates a pet through the API and returns the parsed body. */
export async function createPet (ta: TestApp, body: Record<string, unknown>): Promise<{ id: number, name: string, categoryId: number, status: string }> {
  const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload: JSON.stringify(body) })
  if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

/** Asserts an Error answer: the status, the JSON media type, and the whole body, exactly. */
export function assertError (res: Response, status: number, code: string, message: string): void {
  assert.deepEqual({ status: res.statusCode, body: res.json() }, { status, body: { code, message, status } }, `${res.statusCode} ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/json/)
}

/** POSTs a raw body to /v1/pets (JSON content type unless given) with the app's key. */
export async function postPet (ta: TestApp, payload: string | Buffer, headers: Record<string, string> = {}): Promise<Response> {
  return ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json', ...headers }, payload })
}

/** Every pet in the store, read straight from the SQLite file (not through the API under test). */
export function petsInDb (ta: TestApp): Array<{ id: bigint, name: string, category_id: bigint, status: string }> {
  const db = new Database(join(ta.dir, 'petstore.db'), { readonly: true })
  try {
    db.defaultSafeIntegers(true)
    return db.prepare('SELECT id, name, category_id, status FROM pets ORDER BY id').all() as Array<{ id: bigint, name: string, category_id: bigint, status: string }>
  } finally {
    db.close()
  }
}
