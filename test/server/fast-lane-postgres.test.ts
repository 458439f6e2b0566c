// requires: postgresql
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { Metrics } from '../../src/plugins/metrics.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { createTestDatabase } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

/*
 * On PostgreSQL a read-cache miss is a Promise: the fast lane (src/fast-lane.ts) waits for it and
 * answers, as it answers a hit. Two apps over one database, one with the lane and one without, get
 * the same requests; every answer and the counted metrics must be the same, and the lane must have
 * answered the misses (petstore_fast_lane_responses_total), leaving to Fastify what it must answer.
 */
const KEY_TTL_MS = 1000

interface Answer { status: number, headers: Record<string, string>, body: string }

async function call (base: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(base + path, { headers })
  const h = Object.fromEntries(res.headers)
  delete h.date
  delete h['x-request-id']
  delete h['keep-alive']
  delete h.connection
  if (typeof h.ratelimit === 'string') h.ratelimit = h.ratelimit.replace(/;t=\d+$/, ';t=(s)')
  return { status: res.status, headers: h, body: await res.text() }
}

async function series (metrics: Metrics): Promise<string[]> {
  const text = await metrics.registry.metrics()
  return text.split('\n').filter(l => /^petstore_(http_requests_total|rate_limited_total|deprecated_getpet_calls_total|read_cache_(hits|misses)_total|store_errors_total)/.test(l)).sort()
}

describe('the fast lane on PostgreSQL (in process, over HTTP)', () => {
  it('waits for a miss and answers it as Fastify would; a pet not found, a refused cursor and a store that cannot read are Fastify\'s', async (t) => {
    const url = await createTestDatabase(t)
    const config = loadConfig({ DATABASE_URL: url, EVENT_LOOP_MAX_DELAY_MS: '0', KEY_CACHE_TTL_MS: String(KEY_TTL_MS) })
    const seedStore = await openStore(config)
    let key: string
    try {
      key = (await createApiKey(seedStore, 'main')).key
      for (let i = 0; i < 12; i++) await seedStore.createPet({ name: `pet ${i}`, categoryId: BigInt(i), status: i % 2 === 0 ? 'available' : 'sold' })
      await seedStore.getOrCreateSetting('cursor_hmac_key', () => randomBytes(32).toString('hex'))
    } finally {
      await seedStore.close()
    }
    const apps: FastifyInstance[] = []
    const metrics: Metrics[] = []
    const stores = []
    for (const fastLane of [true, false]) {
      const store = await openStore(config)
      onCleanup(t, () => store.close())
      stores.push(store)
      const m = new Metrics(store)
      const app = await buildApp({ config, store, metrics: m, fastLane })
      onCleanup(t, () => app.close())
      await app.listen({ host: '127.0.0.1', port: 0 })
      apps.push(app)
      metrics.push(m)
    }
    const [lane, plain] = apps.map(app => `http://127.0.0.1:${(app.server.address() as { port: number }).port}`) as [string, string]
    const auth = { authorization: `Bearer ${key}` }
    const laneAnswers = (): number => metrics[0]!.fastLane.n
    const same = async (path: string, headers: Record<string, string> = auth): Promise<Answer> => {
      const a = await call(lane, path, headers)
      const b = await call(plain, path, headers)
      assert.deepEqual(a, b, path)
      return a
    }
    // A key is trusted by the key cache for KEY_CACHE_TTL_MS after the policy verified it. Each
    // request below comes right after the key was verified afresh (the cache's time waited out, a
    // control answered by Fastify, then one answered by the lane), so that it is the request, not an
    // expiring key, that decides whether the lane answers.
    await same('/v1/pets/1')
    const byLane = async (expected: boolean, path: string): Promise<Answer> => {
      await new Promise(resolve => setTimeout(resolve, KEY_TTL_MS + 10))
      await same('/v1/pets/1')
      const n = laneAnswers()
      await same('/v1/pets/1')
      assert.equal(laneAnswers(), n + 1, 'the control before the request was the lane\'s')
      const answer = await same(path)
      assert.equal(laneAnswers(), expected ? n + 2 : n + 1, `the lane ${expected ? 'answered' : 'left to Fastify'} ${path}`)
      return answer
    }

    // Misses, answered by the lane once the store's Promise settles; then hits.
    assert.equal((await byLane(true, '/v1/pets/3')).status, 200)
    await byLane(true, '/v1/pets/3')
    await byLane(true, '/v1/pets/7')
    const page = await byLane(true, '/v1/pets?limit=5&status=sold')
    assert.equal(page.status, 200)
    const next = /<([^>]+)>; rel="next"/.exec(page.headers.link ?? '')![1]!
    await byLane(true, next)
    await byLane(true, '/v1/pets?limit=50')
    // Fastify's: no such pet (404, its miss counted once), a cursor of another filter (400).
    assert.equal((await byLane(false, '/v1/pets/999')).status, 404)
    assert.equal((await byLane(false, next.replace('status=sold', 'status=available'))).status, 400)
    assert.deepEqual(await series(metrics[0]!), await series(metrics[1]!))

    // A store that cannot read: the lane's miss fails, Fastify answers 503 as without the lane.
    for (const store of stores) store.getPet = async () => { throw Object.assign(new Error('connection terminated'), { code: '57P01' }) }
    const failed = await byLane(false, '/v1/pets/4')
    assert.equal(failed.status >= 500, true, failed.body)
  })
})
