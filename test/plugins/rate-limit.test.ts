// requires: redis-server
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { buildTestApp, tempDir } from '../helpers/app.js'
import { startRedis, startRedisServer } from '../helpers/redis.js'
import { onCleanup } from '../helpers/cleanup.js'

const BAD_KEY = 'Bearer psk_' + 'A'.repeat(43)

describe('per-API-key rate limit', () => {
  it('answers 429 rate_limited with Retry-After and RateLimit headers once the key used up its window', async (t) => {
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' } })
    for (let i = 0; i < 3; i++) {
      const ok = await ta.app.inject({ url: '/v1/pets', headers: ta.auth })
      assert.equal(ok.statusCode, 200)
      assert.equal(ok.headers['ratelimit-policy'], '"key";q=3;w=60')
      assert.match(String(ok.headers.ratelimit), new RegExp(`^"key";r=${2 - i};t=\\d+$`))
    }
    const res = await ta.app.inject({ url: '/v1/pets', headers: ta.auth })
    assert.equal(res.statusCode, 429)
    assert.equal(res.json().code, 'rate_limited')
    assert.equal(res.json().status, 429)
    assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message', 'status'])
    const retry = Number(res.headers['retry-after'])
    assert.ok(retry >= 1 && retry <= 60, `Retry-After ${res.headers['retry-after']}`)
    assert.match(String(res.headers.ratelimit), /^"key";r=0;t=\d+$/)
    assert.equal((await ta.app.inject({ url: '/healthz' })).statusCode, 200) // outside /v1: not limited

    // Another key has its own budget.
    const other = await createApiKey(ta.store, 'other')
    const res2 = await ta.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${other.key}` } })
    assert.equal(res2.statusCode, 200)

    const metrics = await ta.metrics.registry.getSingleMetricAsString('petstore_rate_limited_total')
    assert.match(metrics, /petstore_rate_limited_total\{scope="key"\} 1/)
  })

  it('starts a new window when the clock reaches the end of the current one', async (t) => {
    // The library's in-memory windows read Date.now(): the test moves it.
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2027-01-01T00:00:00Z') })
    const tick = (ms: number) => { t.mock.timers.tick(ms) }
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_MS: '60000' } })
    const get = () => ta.app.inject({ url: '/v1/pets', headers: ta.auth })
    const seen = async (status: number, ratelimit: string, retryAfter?: string) => {
      const res = await get()
      assert.deepEqual([res.statusCode, res.headers.ratelimit, res.headers['retry-after']], [status, ratelimit, retryAfter])
    }
    await seen(200, '"key";r=1;t=60')
    tick(30_000)
    await seen(200, '"key";r=0;t=30')
    await seen(429, '"key";r=0;t=30', '30')
    tick(29_999)
    await seen(429, '"key";r=0;t=1', '1')
    tick(1)
    await seen(200, '"key";r=1;t=60')
  })

  it('is shared by every instance through Redis when REDIS_URL is set', async (t) => {
    const redisUrl = await startRedis(t)
    const env = { RATE_LIMIT_MAX: '4', REDIS_URL: redisUrl }
    const a = await buildTestApp(t, { env })
    const b = await buildTestApp(t, { env, dir: a.dir }) // a second instance on the same database
    const codes: number[] = []
    for (const app of [a.app, b.app, a.app, b.app, a.app, b.app]) {
      codes.push((await app.inject({ url: '/v1/pets', headers: a.auth })).statusCode)
    }
    assert.deepEqual(codes, [200, 200, 200, 200, 429, 429])
  })

  it('lets requests through, and counts the failure, while Redis is unreachable', async (t) => {
    const redis = await startRedisServer(t)
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_MAX: '1', REDIS_URL: redis.url } })
    assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth })).statusCode, 200)
    assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth })).statusCode, 429)
    await redis.stop()
    const res = await ta.app.inject({ url: '/v1/pets', headers: ta.auth })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers.ratelimit, undefined)
    assert.match(await ta.metrics.registry.getSingleMetricAsString('petstore_store_errors_total'), /petstore_store_errors_total\{store="redis"\} [1-9]/)
  })

  it('refuses to start when REDIS_URL cannot be reached, naming it', async (t) => {
    const redis = await startRedisServer(t)
    await redis.stop()
    const dir = tempDir(t)
    const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'p.db')}`, REDIS_URL: redis.url }, dir)
    const store = await openStore(config)
    onCleanup(t, () => store.close())
    await assert.rejects(buildApp({ config, store }), /^Error: REDIS_URL: cannot connect to Redis/)
  })
})

describe('per-address limit on requests without a valid key', () => {
  it('refuses an address with 429 once it spent its failed-authentication budget, before looking at any key', async (t) => {
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_ANON_MAX: '5' } })
    let lookups = 0
    const find = ta.store.findApiKeyByHash.bind(ta.store)
    ta.store.findApiKeyByHash = async (hash) => { lookups++; return await find(hash) }
    const codes: number[] = []
    for (let i = 0; i < 8; i++) {
      const key = 'Bearer psk_' + String(i).padStart(43, 'x') // a new unknown key each time: no cache helps
      codes.push((await ta.app.inject({ url: '/v1/pets', headers: { authorization: key }, remoteAddress: '203.0.113.7' })).statusCode)
    }
    assert.deepEqual(codes, [401, 401, 401, 401, 401, 429, 429, 429])
    // Only the keys tried before the address was refused reached the store (the 6th was looked up, then refused).
    assert.equal(lookups, 6)

    const blocked = await ta.app.inject({ url: '/v1/pets', headers: ta.auth, remoteAddress: '203.0.113.7' })
    assert.equal(blocked.statusCode, 429)
    assert.equal(blocked.json().code, 'rate_limited')
    assert.ok(Number(blocked.headers['retry-after']) >= 1)
    assert.equal(blocked.headers['ratelimit-policy'], '"address";q=5;w=60')

    // Other addresses, and valid keys from them, are untouched.
    assert.equal((await ta.app.inject({ url: '/v1/pets', headers: { authorization: BAD_KEY }, remoteAddress: '198.51.100.1' })).statusCode, 401)
    assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth, remoteAddress: '198.51.100.2' })).statusCode, 200)
    const metrics = await ta.metrics.registry.getSingleMetricAsString('petstore_rate_limited_total')
    assert.match(metrics, /petstore_rate_limited_total\{scope="address"\} 4/)
  })

  it('lifts an address block when the clock reaches the end of its window', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2027-01-01T00:00:00Z') })
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_ANON_MAX: '1', RATE_LIMIT_WINDOW_MS: '60000' } })
    const from = (authorization: string) => ta.app.inject({ url: '/v1/pets', headers: { authorization }, remoteAddress: '203.0.113.9' })
    assert.equal((await from(BAD_KEY)).statusCode, 401)
    const blocked = await from(BAD_KEY)
    assert.deepEqual([blocked.statusCode, blocked.headers['retry-after']], [429, '60'])
    // A valid key this instance has not seen yet is refused with the address while the block holds.
    const { key } = await createApiKey(ta.store, 'not seen yet')
    t.mock.timers.tick(59_999)
    const still = await from(`Bearer ${key}`)
    assert.deepEqual([still.statusCode, still.headers['retry-after']], [429, '1'])
    t.mock.timers.tick(1)
    assert.equal((await from(`Bearer ${key}`)).statusCode, 200)
    assert.equal((await from(BAD_KEY)).statusCode, 401, 'a new window: the budget is back')
  })

  it('is shared by every instance through Redis: an address blocked on one is refused by another', async (t) => {
    const redisUrl = await startRedis(t)
    const env = { RATE_LIMIT_ANON_MAX: '2', REDIS_URL: redisUrl }
    const a = await buildTestApp(t, { env })
    const b = await buildTestApp(t, { env, dir: a.dir })
    const from = (ta: typeof a, i: number) => ta.app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer psk_' + String(i).padStart(43, 'r') }, remoteAddress: '203.0.113.50' })
    assert.deepEqual([(await from(a, 1)).statusCode, (await from(a, 2)).statusCode, (await from(a, 3)).statusCode], [401, 401, 429])
    let lookups = 0
    const find = b.store.findApiKeyByHash.bind(b.store)
    b.store.findApiKeyByHash = async (hash) => { lookups++; return await find(hash) }
    const refused = await from(b, 4)
    assert.equal(refused.statusCode, 429)
    assert.equal(lookups, 0, 'refused before its key was looked up')
    assert.equal(refused.headers['ratelimit-policy'], '"address";q=2;w=60')
    assert.equal((await b.app.inject({ url: '/v1/pets', headers: { authorization: BAD_KEY }, remoteAddress: '198.51.100.50' })).statusCode, 401)
  })

  it('does not count requests with a valid key against the address', async (t) => {
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_ANON_MAX: '2' } })
    for (let i = 0; i < 5; i++) {
      assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth })).statusCode, 200)
    }
    assert.equal((await ta.app.inject({ url: '/v1/pets' })).statusCode, 401)
  })
})
