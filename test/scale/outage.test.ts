import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg from 'pg'
import { startCluster } from '../../scripts/pg-cluster.mjs'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'

interface Outcome { status: number, body: { id?: number, code?: string, message?: string, status?: number }, startedAt: number }

/** A request not answered within this bound counts as a hang; the settings below allow about 1.5 s. */
const HANG_MS = 15000

describe('PostgreSQL outage', () => {
  it('answers 503 Errors while PostgreSQL is down and 201s again once it is back, without a restart', async (t) => {
    // A cluster of its own, since this test stops it.
    const cluster = await startCluster({ maxConnections: 50 })
    t.after(() => cluster.destroy())
    const admin = new pg.Client({ connectionString: cluster.url })
    await admin.connect()
    await admin.query('CREATE DATABASE outage')
    await admin.end()
    const url = new URL(cluster.url)
    url.pathname = '/outage'
    const config = loadConfig({ DATABASE_URL: url.href, PG_CONNECT_TIMEOUT_MS: '500', PG_STATEMENT_TIMEOUT_MS: '1000' })
    const store = await openStore(config)
    const app = await buildApp({ config, store })
    t.after(() => app.close())
    const { key } = await createApiKey(store, 'outage')
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }

    const outcomes: Outcome[] = []
    let running = true
    const load = Promise.all(Array.from({ length: 6 }, async (_, w) => {
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
    const until = async (what: string, done: () => boolean): Promise<void> => {
      for (let waited = 0; !done(); waited += 20) {
        if (waited > 60000) throw new Error(`gave up waiting for ${what}`)
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    }
    const count = (from: number, pred: (o: Outcome) => boolean) => outcomes.filter(o => o.startedAt >= from && pred(o)).length

    try {
      await until('201s under load', () => count(0, o => o.status === 201) >= 30)
      const lastIdBefore = Math.max(...outcomes.filter(o => o.status === 201).map(o => o.body.id!))

      await cluster.stop()
      const down = Date.now()
      await until('answers while down', () => count(down, () => true) >= 30)
      for (const o of outcomes.filter(o => o.startedAt >= down)) {
        assert.equal(o.status, 503)
        assert.deepEqual(o.body, { code: 'service_unavailable', message: 'the store is unavailable; retry later', status: 503 })
      }
      const ready = await app.inject({ url: '/readyz' })
      assert.equal(ready.statusCode, 503)
      assert.equal(ready.json().code, 'service_unavailable')

      await cluster.start()
      const up = Date.now()
      await until('201s after PostgreSQL returned', () => count(up, o => o.status === 201) >= 1)
      const firstBack = Math.min(...outcomes.filter(o => o.startedAt >= up && o.status === 201).map(o => o.startedAt))
      await until('answers after recovery', () => count(firstBack + 1, () => true) >= 30)
      const after = outcomes.filter(o => o.startedAt > firstBack)
      assert.deepEqual(after.filter(o => o.status !== 201), [], 'every create after recovery succeeds')
      for (const o of after) assert.ok(o.body.id! > lastIdBefore, 'ids are never reused across the outage')
      assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
    } finally {
      running = false
      await load
    }
    // Nothing but 201 and 503 Error objects, ever: no 500, no driver text.
    assert.deepEqual([...new Set(outcomes.map(o => o.status))].sort(), [201, 503])
  })
})
