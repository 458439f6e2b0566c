// requires: postgresql, pgbouncer
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { startCluster, type Cluster } from '../../scripts/pg-cluster.mjs'
import { startPgBouncer, type PgBouncer } from '../../scripts/pgbouncer.mjs'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { createDatabaseOn } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

interface Outcome { status: number, body: { id?: number, code?: string, message?: string, status?: number }, startedAt: number }

/** A request not answered within this bound counts as a hang; the settings below allow about 1.5 s. */
const HANG_MS = 15000
const UNAVAILABLE = { code: 'service_unavailable', message: 'the store is unavailable; retry later', status: 503 }
/** A create (these have no Idempotency-Key) whose insert was sent and never confirmed: it may have been written. */
const UNKNOWN = { code: 'outcome_unknown', message: 'the store did not confirm the write: it may or may not have been made; retry with the same Idempotency-Key', status: 503 }

/**
 * The app over a PostgreSQL cluster of its own (these tests stop it), with short timeouts; with
 * `pooler`, through a PgBouncer of its own in front of that cluster (transaction mode; it retries a
 * failed server login after 1 s instead of its default 15 s, to keep the test short).
 */
async function appOnOwnCluster (t: TestContext, pooler = false): Promise<{ cluster: Cluster, bouncer?: PgBouncer, app: FastifyInstance, headers: Record<string, string> }> {
  const cluster = await startCluster({ maxConnections: 50 })
  onCleanup(t, () => cluster.destroy())
  const bouncer = pooler ? await startPgBouncer(cluster.url, { server_login_retry: 1 }) : undefined
  if (bouncer !== undefined) onCleanup(t, () => bouncer.destroy())
  const url = await createDatabaseOn(cluster.url, 'outage', bouncer?.url)
  // The per-key limit is off: a long outage answers 503s fast enough to use up a window.
  const config = loadConfig({ DATABASE_URL: url, PG_CONNECT_TIMEOUT_MS: '500', PG_STATEMENT_TIMEOUT_MS: '500', RATE_LIMIT_MAX: '0' })
  const store = await openStore(config)
  const app = await buildApp({ config, store })
  onCleanup(t, () => app.close())
  const { key } = await createApiKey(store, 'outage')
  return { cluster, ...(bouncer !== undefined ? { bouncer } : {}), app, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }
}

/** Six clients creating pets without pause, recording every answer, until stopped. */
function startLoad (app: FastifyInstance, headers: Record<string, string>) {
  const outcomes: Outcome[] = []
  let running = true
  const done = Promise.all(Array.from({ length: 6 }, async (_, w) => {
    for (let i = 0; running; i++) {
      const startedAt = Date.now()
      let timer: NodeJS.Timeout | undefined
      const res = await Promise.race([
        app.inject({ method: 'POST', url: '/v1/pets', headers, payload: `{"name":"w${w} ${i}","categoryId":${w}}` }),
        new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error('a request hung')), HANG_MS) })
      ]).finally(() => clearTimeout(timer))
      outcomes.push({ status: res.statusCode, body: res.json(), startedAt })
      if (res.statusCode !== 201) await new Promise(resolve => setTimeout(resolve, 20))
    }
  }))
  const until = async (what: string, cond: () => boolean): Promise<void> => {
    for (let waited = 0; !cond(); waited += 20) {
      if (waited > 60000) throw new Error(`gave up waiting for ${what}`)
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  }
  const since = (from: number, pred: (o: Outcome) => boolean = () => true) => outcomes.filter(o => o.startedAt >= from && pred(o))
  const stop = async () => { running = false; await done }
  return { outcomes, until, since, stop }
}

/**
 * Drives the load through an outage: `down()` makes PostgreSQL unavailable, `up()` brings it back.
 * While down, every request started answers a 503 Error (and /readyz 503): service_unavailable, or
 * outcome_unknown when its insert reached a server (or a pooler's queue) that never answered; once a create succeeds
 * again, every later one does, with ids above all earlier ones; never anything but 201 or 503.
 */
async function throughOutage (app: FastifyInstance, headers: Record<string, string>, down: () => Promise<void> | void, up: () => Promise<void> | void): Promise<void> {
  const load = startLoad(app, headers)
  try {
    await load.until('201s under load', () => load.since(0, o => o.status === 201).length >= 30)
    await down()
    const downAt = Date.now()
    await load.until('answers while down', () => load.since(downAt).length >= 30)
    for (const o of load.since(downAt)) assert.deepEqual({ status: o.status, body: o.body }, { status: 503, body: o.body.code === 'outcome_unknown' ? UNKNOWN : UNAVAILABLE })
    const ready = await app.inject({ url: '/readyz' })
    assert.equal(ready.statusCode, 503)
    assert.equal(ready.json().code, 'service_unavailable')
    const lastIdBefore = Math.max(...load.outcomes.filter(o => o.status === 201).map(o => o.body.id!))

    await up()
    const upAt = Date.now()
    await load.until('201s after PostgreSQL returned', () => load.since(upAt, o => o.status === 201).length >= 1)
    const firstBack = Math.min(...load.since(upAt, o => o.status === 201).map(o => o.startedAt))
    await load.until('answers after recovery', () => load.since(firstBack + 1).length >= 30)
    const after = load.since(firstBack + 1)
    assert.deepEqual(after.filter(o => o.status !== 201), [], 'every create after recovery succeeds')
    for (const o of after) assert.ok(o.body.id! > lastIdBefore, 'ids are never reused across the outage')
    assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
  } finally {
    await load.stop()
  }
  assert.deepEqual([...new Set(load.outcomes.map(o => o.status))].sort(), [201, 503], 'only 201s and 503 Errors, never a 500')
}

describe('PostgreSQL outage', () => {
  it('answers 503 Errors while PostgreSQL is stopped and 201s again once it is back, without a restart', async (t) => {
    const { cluster, app, headers } = await appOnOwnCluster(t)
    await throughOutage(app, headers, () => cluster.stop(), () => cluster.start())
  })

  it('answers 503 Errors, not a hang, while PostgreSQL accepts connections but answers nothing', async (t) => {
    const { cluster, app, headers } = await appOnOwnCluster(t)
    let frozen = false
    try {
      await throughOutage(app, headers,
        () => { cluster.signal('SIGSTOP'); frozen = true },
        () => { cluster.signal('SIGCONT'); frozen = false })
    } finally {
      // Thawed before the cleanup, which stops the server.
      if (frozen) cluster.signal('SIGCONT')
    }
  })
})

describe('PostgreSQL outage through PgBouncer', () => {
  it('answers 503 Errors while PostgreSQL behind the pooler is stopped and 201s again once it is back', async (t) => {
    const { cluster, app, headers } = await appOnOwnCluster(t, true)
    await throughOutage(app, headers, () => cluster.stop(), () => cluster.start())
  })

  it('answers 503 Errors while the pooler itself is down and 201s again once it is back', async (t) => {
    const { bouncer, app, headers } = await appOnOwnCluster(t, true)
    await throughOutage(app, headers, () => bouncer!.stop(), () => bouncer!.start())
  })
})
