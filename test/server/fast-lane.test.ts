import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { Metrics } from '../../src/plugins/metrics.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import { tempDir } from '../helpers/app.js'
import { fcParams } from '../helpers/property.js'
import { onCleanup } from '../helpers/cleanup.js'

/*
 * The fast lane (src/fast-lane.ts) must answer exactly as Fastify would. Two apps, one with the lane
 * (the default) and one without (AppOptions.fastLane false), on copies of one database (same keys,
 * pets and cursor key), get the same requests one after the other over HTTP; every answer must be
 * the same, apart from what differs between any two answers (Date, a generated request id, the
 * seconds left in a rate-limit window); then their access lines and metrics must be the same, and
 * the lane must have answered some of them (petstore_fast_lane_responses_total), or the comparison
 * would prove nothing.
 */

interface Answer { status: number, headers: Record<string, string | string[] | undefined>, body: string }
type Headers = Record<string, string> | string[]

/** One request on a fresh connection; `headers` as an object or as raw name/value pairs (to repeat one). */
function call (base: string, method: string, path: string, headers: Headers = {}, body?: string): Promise<Answer> {
  const url = new URL(base)
  return new Promise((resolve, reject) => {
    const raw = Array.isArray(headers) ? [...headers, 'connection', 'close'] : { connection: 'close', ...headers }
    const req = request({ host: url.hostname, port: url.port, method, path, headers: raw, agent: false }, (res) => {
      let data = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => { data += d })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** An answer without what differs between any two answers of one server too. */
function comparable (a: Answer): Answer {
  const headers = { ...a.headers }
  delete headers.date
  delete headers.connection
  delete headers['keep-alive']
  if (typeof headers['x-request-id'] === 'string' && UUID.test(headers['x-request-id'])) headers['x-request-id'] = '(generated)'
  if (typeof headers.ratelimit === 'string') headers.ratelimit = headers.ratelimit.replace(/;t=\d+$/, ';t=(s)')
  if (headers['retry-after'] !== undefined && a.status === 429) headers['retry-after'] = '(s)'
  return { status: a.status, headers, body: a.status === 429 ? a.body.replace(/\d+ s\b/, '(s) s') : a.body }
}

/** The two apps' base URLs, their metrics and the log lines they wrote. */
interface Pair { lane: { url: string }, fastify: { url: string }, metrics: [Metrics, Metrics], logs: [string[], string[]] }

/** The same request to both servers (the lane's first), the answers compared; the lane's answer is returned. */
async function same (pair: Pair, method: string, path: string, headers: Headers = {}, body?: string): Promise<Answer> {
  const a = await call(pair.lane.url, method, path, headers, body)
  const b = await call(pair.fastify.url, method, path, headers, body)
  assert.deepEqual(comparable(a), comparable(b), `${method} ${path} ${JSON.stringify(headers)}`)
  return a
}

/** The series both apps must agree on: every request, rate-limit, getPet and read-cache count (latency: only how many). */
async function countedSeries (metrics: Metrics): Promise<string[]> {
  const text = await metrics.registry.metrics()
  return text.split('\n').filter(l => /^petstore_(http_requests_total|http_request_duration_seconds_count|rate_limited_total|deprecated_getpet_calls_total|read_cache_(hits|misses)_total|overload_rejections_total|store_errors_total)/.test(l)).sort()
}

const laneAnswers = (pair: Pair): number => pair.metrics[0].fastLane.n

/** The access lines a server wrote, without what differs between runs (time, pid, latency, a generated id). */
function accessLines (lines: string[]): unknown[] {
  return lines.join('').split('\n').filter(l => l.includes('"msg":"request completed"')).map(l => {
    const { time, pid, ms, ...rest } = JSON.parse(l) as Record<string, unknown>
    assert.equal(typeof time, 'number')
    assert.equal(typeof pid, 'number')
    assert.equal(typeof ms, 'number')
    return { ...rest, reqId: UUID.test(String(rest.reqId)) ? '(generated)' : rest.reqId }
  })
}

interface Seeded { db: string, keys: Record<'main' | 'refusals' | 'limited' | 'later' | 'revoked' | 'reader' | 'writer', string>, laterId: number }

/** A database with keys, 25 pets and the cursor key, copied for the second server. */
async function seed (t: TestContext): Promise<Seeded & { copy: string }> {
  const dir = tempDir(t)
  const db = join(dir, 'lane.db')
  const store = await openStore(loadConfig({ DATABASE_URL: `sqlite:${db}` }))
  const keys: Partial<Seeded['keys']> = {}
  let laterId = 0
  try {
    for (const name of ['main', 'refusals', 'limited', 'later', 'revoked', 'reader', 'writer'] as const) {
      const scopes = name === 'reader' ? ['pets:read' as const] : name === 'writer' ? ['pets:write' as const] : undefined
      const { key, record } = await createApiKey(store, name, { scopes })
      keys[name] = key
      if (name === 'later') laterId = record.id
      if (name === 'revoked') await store.revokeApiKey(record.id, new Date())
    }
    const statuses = ['available', 'pending', 'sold'] as const
    // Some names take several bytes a character in UTF-8: Content-Length counts bytes, not characters.
    for (let i = 0; i < 25; i++) await store.createPet({ name: i % 4 === 1 ? `Zoë 🐕 ${i}` : `pet ${i}`, categoryId: BigInt(i % 4), status: statuses[i % 3]! })
    await store.getOrCreateSetting('cursor_hmac_key', () => randomBytes(32).toString('hex'))
  } finally {
    await store.close()
  }
  const copy = join(dir, 'fastify.db')
  copyFileSync(db, copy)
  for (const ext of ['-wal', '-shm']) if (existsSync(db + ext)) copyFileSync(db + ext, copy + ext)
  return { db, copy, keys: keys as Seeded['keys'], laterId }
}

async function revoke (db: string, id: number): Promise<void> {
  const store = await openStore(loadConfig({ DATABASE_URL: `sqlite:${db}` }))
  try {
    assert.ok(await store.revokeApiKey(id, new Date()))
  } finally {
    await store.close()
  }
}

const LINK = /<([^>]+)>; rel="next"/

describe('the fast lane answers as Fastify would (in process, over HTTP)', () => {
  it('gives the same status, headers, body, access line and metrics for reads, misses, 304s, bad queries, bad keys and limits', async (t) => {
    const s = await seed(t)
    const max = 150
    const { pair } = await inProcessPair(t, s, Date.now, { RATE_LIMIT_MAX: String(max), RATE_LIMIT_ANON_MAX: '30', KEY_CACHE_TTL_MS: '1000' })
    const auth = { authorization: `Bearer ${s.keys.main}` }

    // Misses: the SQLite store reads synchronously, so a miss is the lane's to answer too (getPet, a
    // full page, the newest page), counted as a miss; no pet with the id is Fastify's 404. After a
    // control the lane answers (the key trusted by the key cache).
    const missByLane = async (lane: boolean, path: string): Promise<void> => {
      let n = laneAnswers(pair)
      for (let i = 0; i < 5; i++) {
        await same(pair, 'GET', '/v1/pets/24', auth)
        if (laneAnswers(pair) > n) break
        n = laneAnswers(pair)
      }
      n = laneAnswers(pair)
      const misses = pair.metrics[0].readCache.pet.misses.n + pair.metrics[0].readCache.page.misses.n
      await same(pair, 'GET', path, auth)
      assert.equal(laneAnswers(pair), lane ? n + 1 : n, `the lane ${lane ? 'answered' : 'left to Fastify'} the miss ${path}`)
      assert.equal(pair.metrics[0].readCache.pet.misses.n + pair.metrics[0].readCache.page.misses.n, misses + 1, `one miss counted for ${path}`)
    }
    await missByLane(true, '/v1/pets/7')
    await missByLane(true, '/v1/pets?limit=6')
    await missByLane(true, '/v1/pets?status=pending&limit=100')
    await missByLane(false, '/v1/pets/99')

    // Reads: a miss (the store), then hits (the lane's), getPet and pages (a full one is cached, the last is not).
    for (let i = 0; i < 3; i++) await same(pair, 'GET', '/v1/pets/1', auth)
    await same(pair, 'GET', '/v1/pets/25', auth)
    await same(pair, 'GET', '/v1/pets/26', auth)
    let page = await same(pair, 'GET', '/v1/pets', auth)
    page = await same(pair, 'GET', '/v1/pets', auth)
    assert.equal(page.status, 200)
    let next = await same(pair, 'GET', '/v1/pets?limit=10', auth)
    for (let i = 0; i < 4 && next.headers.link !== undefined; i++) {
      const link = LINK.exec(String(next.headers.link))![1]!
      await same(pair, 'GET', link, auth)
      next = await same(pair, 'GET', link, auth)
    }
    await same(pair, 'GET', '/v1/pets?status=sold&limit=3', auth)
    const sold = await same(pair, 'GET', '/v1/pets?limit=3&status=sold', auth)
    const soldNext = LINK.exec(String(sold.headers.link))![1]!
    await same(pair, 'GET', soldNext, auth)
    await same(pair, 'GET', soldNext, auth)
    // The cursor of one filter under another: 400 from the handler.
    await same(pair, 'GET', soldNext.replace('status=sold', 'status=pending'), auth)
    await same(pair, 'GET', soldNext.replace('&status=sold', ''), auth)

    // Conditional reads: 304 on a match, weak or *, 200 otherwise; If-Match 200 or 412.
    const pet = await same(pair, 'GET', '/v1/pets/2', auth)
    await same(pair, 'GET', '/v1/pets/2', auth)
    const etag = String(pet.headers.etag)
    const pageEtag = String(page.headers.etag)
    for (const inm of [etag, `W/${etag}`, '*', `"x", ${etag}`, '"other"', '']) {
      await same(pair, 'GET', '/v1/pets/2', { ...auth, 'if-none-match': inm })
      await same(pair, 'GET', '/v1/pets', { ...auth, 'if-none-match': inm === etag ? pageEtag : inm })
    }
    await same(pair, 'GET', '/v1/pets/2', { ...auth, 'if-match': etag })
    await same(pair, 'GET', '/v1/pets/2', { ...auth, 'if-match': '"stale"' })
    await same(pair, 'GET', '/v1/pets', { ...auth, 'if-match': '"stale"' })

    // Requests the lane must leave to Fastify (400, 404, 405, 417...), and spellings it must read as
    // Fastify does (it routes and validates with Fastify's router and the route's schemas), under a
    // key of their own, well within its limit. Each comes right after a control the lane answers (the
    // key trusted by the key cache, the pet cached), and must move the lane's count by one or not at
    // all: else it could pass only because the lane was off for some other reason.
    const ref = { authorization: `Bearer ${s.keys.refusals}` }
    const byLane = async (lane: boolean, method: string, path: string, headers: Headers = ref, body?: string): Promise<void> => {
      let n = laneAnswers(pair)
      let answered = false
      for (let i = 0; i < 5 && !answered; i++) {
        await same(pair, 'GET', '/v1/pets/1', ref)
        const m = laneAnswers(pair)
        answered = m > n
        n = m
      }
      assert.ok(answered, 'the control before the request was the lane\'s')
      await same(pair, method, path, headers, body)
      assert.equal(laneAnswers(pair), lane ? n + 1 : n, `the lane ${lane ? 'answered' : 'left to Fastify'} ${method} ${path} ${JSON.stringify(headers)}`)
    }
    const leftToFastify = async (method: string, path: string, headers?: Headers, body?: string): Promise<void> => { await byLane(false, method, path, headers, body) }
    for (const path of [
      '/v1/pets?limit=0', '/v1/pets?limit=101', '/v1/pets?limit=020', '/v1/pets?limit=20&limit=20',
      '/v1/pets?limit=', '/v1/pets?limit', '/v1/pets?foo=1', '/v1/pets?status=bogus',
      '/v1/pets?status=sold&status=sold', '/v1/pets?cursor=AAAA', '/v1/pets?cursor=', '/v1/pets?cursor=a%2Bb', '/v1/pets?limit=+20',
      '/v1/pets/', '/v1/pets/01', '/v1/pets/0', '/v1/pets/-1', '/v1/pets/1.0', '/v1/pets/%ZZ', '/v1/pets?limit=%ZZ',
      '/v1/pets/99999999999999999999', '/v1/pets//1', '/v1//pets/1', '/V1/pets/1', '/v1/pets/1/', '/v1/pets/1;x',
      '/v1/pets/1#x', `/v1/pets?cursor=${'a'.repeat(8200)}`
    ]) await leftToFastify('GET', path)
    for (const path of ['/v1/pets?limit=%32%30', '/v1/pets?', '/v1/pets?limit=20&', '/v1/pets/%31', '/v1/pets/1?x=1']) await byLane(true, 'GET', path)
    await leftToFastify('HEAD', '/v1/pets/1')
    await leftToFastify('HEAD', '/v1/pets')
    await leftToFastify('DELETE', '/v1/pets/1')
    await leftToFastify('GET', '/v1/pets/1', { ...ref, expect: '100-continue' })
    await leftToFastify('GET', '/v1/pets/1', { ...ref, expect: 'something' })
    await leftToFastify('GET', '/v1/pets/1', { ...ref, 'content-length': '2' }, '{}')
    await leftToFastify('GET', '/v1/pets/1', { ...ref, 'transfer-encoding': 'chunked' }, '')
    await leftToFastify('GET', '/v1/pets/1', { ...ref, 'if-match': '"stale"' })
    await leftToFastify('GET', '/v1/pets/1', { ...ref, 'accept-version': '1.x' })
    await leftToFastify('GET', '/v1/pets/1', ['host', 'a', 'host', 'b', 'authorization', ref.authorization])
    await leftToFastify('GET', '/v1/pets/1', ['host', 'user@a', 'authorization', ref.authorization])

    // Scopes: a read-only key's cached read is the lane's; a write-only key's is left to the policy (403),
    // each key first trusted by the key cache (a first use is verified by the policy).
    const reader = { authorization: `Bearer ${s.keys.reader}` }
    const writer = { authorization: `Bearer ${s.keys.writer}` }
    await same(pair, 'GET', '/v1/pets/1', reader)
    await same(pair, 'GET', '/v1/pets/1', writer)
    await byLane(true, 'GET', '/v1/pets/1', reader)
    await byLane(true, 'GET', '/v1/pets?limit=10', reader)
    await leftToFastify('GET', '/v1/pets/1', writer)
    await leftToFastify('GET', '/v1/pets?limit=10', writer)
    assert.equal((await same(pair, 'GET', '/v1/pets/1', writer)).status, 403)

    // Headers the lane handles as Fastify does (or leaves to it).
    for (const id of ['client-id.1', 'bad id', 'psk_looks_like_a_key', 'x'.repeat(129)]) await same(pair, 'GET', '/v1/pets/1', { ...auth, 'x-request-id': id })
    await same(pair, 'GET', '/v1/pets/1', { ...auth, 'content-length': '0' })
    await same(pair, 'GET', '/v1/pets/1', { ...auth, origin: 'https://elsewhere.example' })
    await same(pair, 'GET', '/v1/pets/1', ['authorization', auth.authorization, 'authorization', auth.authorization])

    // Keys: none, another scheme, malformed, unknown, revoked before, and revoked after use (once the cache's trust ran out).
    for (const authorization of [undefined, 'Basic abc', 'Bearer', 'Bearer psk_!!', `Bearer psk_${'A'.repeat(43)}`, `Bearer ${s.keys.revoked}`, `bearer  ${s.keys.main}`]) {
      await same(pair, 'GET', '/v1/pets/1', authorization === undefined ? {} : { authorization })
      await same(pair, 'GET', '/v1/pets', authorization === undefined ? {} : { authorization })
    }
    const later = { authorization: `Bearer ${s.keys.later}` }
    await same(pair, 'GET', '/v1/pets/1', later)
    await same(pair, 'GET', '/v1/pets/1', later)
    await Promise.all([revoke(s.db, s.laterId), revoke(s.copy, s.laterId)])
    await new Promise(resolve => setTimeout(resolve, 1100)) // past KEY_CACHE_TTL_MS: both servers must ask the store again
    assert.equal((await same(pair, 'GET', '/v1/pets/1', later)).status, 401)

    // A key's limit: counted once per request, the same remaining count on every answer, then 429.
    const limited = { authorization: `Bearer ${s.keys.limited}` }
    const statuses: number[] = []
    for (let i = 0; i < max + 4; i++) statuses.push((await same(pair, 'GET', i % 2 === 0 ? '/v1/pets/3' : '/v1/pets?limit=10', limited)).status)
    assert.deepEqual(statuses, [...Array(max).fill(200), 429, 429, 429, 429])

    // The lane answered some of these (or this comparison proved nothing); the server without it, none.
    const laneCount = laneAnswers(pair)
    assert.ok(laneCount >= 20, `the lane answered ${laneCount} requests`)
    assert.equal(pair.metrics[1].fastLane.n, 0)
    // Every other count the same: requests by route and status, latency counts, limits, getPet calls, cache hits and misses.
    assert.deepEqual(await countedSeries(pair.metrics[0]), await countedSeries(pair.metrics[1]))

    // Last: an address over its failed-authentication budget (the lane steps aside while any address is blocked).
    for (let i = 0; i < 32; i++) await same(pair, 'GET', '/v1/pets/1', { authorization: `Bearer psk_${'B'.repeat(43)}` })
    await same(pair, 'GET', '/v1/pets/1', auth)
    await same(pair, 'GET', '/v1/pets/1', { authorization: 'Bearer nope' })

    // The same access lines, in the same order.
    const lines = accessLines(pair.logs[0])
    assert.ok(lines.length > 150, `${lines.length} access lines`)
    assert.deepEqual(lines, accessLines(pair.logs[1]))
  })
})

/**
 * The app with the lane and the app without it, in this process on the two databases, listening on
 * loopback, each logging at info into an array of its own.
 */
async function inProcessPair (t: TestContext, s: Seeded & { copy: string }, now: () => number, env: Record<string, string> = {}, pressureSampleIntervalMs?: number): Promise<{ pair: Pair, metrics: [Metrics, Metrics], apps: [FastifyInstance, FastifyInstance], stores: [Store, Store] }> {
  const apps: FastifyInstance[] = []
  const stores: Store[] = []
  const metrics: Metrics[] = []
  const logs: string[][] = []
  for (const [db, fastLane] of [[s.db, true], [s.copy, false]] as const) {
    const config = loadConfig({ DATABASE_URL: `sqlite:${db}`, EVENT_LOOP_MAX_DELAY_MS: '0', ...env })
    const store = await openStore(config)
    onCleanup(t, () => store.close())
    stores.push(store)
    const m = new Metrics(store)
    const lines: string[] = []
    const logger = { level: 'info', stream: { write: (line: string) => { lines.push(line) } } }
    const app = await buildApp({ config, store, now, metrics: m, pressureSampleIntervalMs, fastLane, logger })
    onCleanup(t, () => app.close())
    await app.listen({ host: '127.0.0.1', port: 0 })
    apps.push(app)
    metrics.push(m)
    logs.push(lines)
  }
  const [lane, fastify] = apps.map(app => `http://127.0.0.1:${(app.server.address() as { port: number }).port}`) as [string, string]
  const pair: Pair = { lane: { url: lane }, fastify: { url: fastify }, metrics: metrics as [Metrics, Metrics], logs: logs as [string[], string[]] }
  return { pair, metrics: pair.metrics, apps: apps as [FastifyInstance, FastifyInstance], stores: stores as [Store, Store] }
}

describe('the fast lane while draining and while shedding load (in process, over HTTP)', () => {
  it('steps aside while the app drains: a cached read is answered by Fastify, ending its connection, as without the lane', async (t) => {
    const s = await seed(t)
    const { pair, metrics, apps } = await inProcessPair(t, s, Date.now)
    const auth = { authorization: `Bearer ${s.keys.main}` }
    for (let i = 0; i < 3; i++) await same(pair, 'GET', '/v1/pets/5', auth)
    await same(pair, 'GET', '/v1/pets?limit=5', auth)
    await same(pair, 'GET', '/v1/pets?limit=5', auth)
    const before = metrics[0].fastLane.n
    assert.ok(before >= 2, 'the lane answered the cached reads before the drain')
    for (const app of apps) void app.drain(60_000)
    for (const path of ['/v1/pets/5', '/v1/pets?limit=5']) {
      const answer = await same(pair, 'GET', path, auth)
      assert.equal(answer.status, 200)
      assert.equal(answer.headers.connection, 'close')
    }
    assert.equal((await same(pair, 'GET', '/readyz')).status, 503)
    assert.equal(metrics[0].fastLane.n, before, 'the lane answered nothing while draining')
  })

  it('steps aside when the store cannot read: a miss gets the 503, its store error counted, as without the lane', async (t) => {
    const s = await seed(t)
    const { pair, metrics, stores } = await inProcessPair(t, s, Date.now)
    const auth = { authorization: `Bearer ${s.keys.main}` }
    for (let i = 0; i < 3; i++) await same(pair, 'GET', '/v1/pets/5', auth)
    const before = metrics[0].fastLane.n
    assert.ok(before >= 1, 'the lane answered reads before the store closed')
    // A read that arrives once the store is closed (as during a shutdown) is refused by the store.
    // Not compared with the other app: whether a key is still trusted without the store (at most
    // KEY_CACHE_TTL_MS) decides which headers a 503 has, and a loaded machine can end it between two answers.
    await stores[0].close()
    const errors = async (): Promise<string | undefined> => /^petstore_store_errors_total\{store="sqlite"\} (\d+)$/m.exec(await metrics[0].registry.metrics())?.[1]
    for (const path of ['/v1/pets/8', '/v1/pets?limit=4']) {
      const a = await call(pair.lane.url, 'GET', path, auth)
      assert.equal(a.status, 503, `${path}: ${a.body}`)
      assert.equal((JSON.parse(a.body) as { code: string }).code, 'service_unavailable')
    }
    assert.equal(metrics[0].fastLane.n, before, 'the lane answered neither')
    assert.equal(await errors(), '2', 'one store error counted per request')
  })

  it('steps aside while shedding: a cached read gets the overload 503, counted, as without the lane', async (t) => {
    const s = await seed(t)
    const { pair, metrics, apps } = await inProcessPair(t, s, Date.now, { EVENT_LOOP_MAX_DELAY_MS: '100' }, 50)
    const auth = { authorization: `Bearer ${s.keys.main}` }
    // Both apps share this process's event loop: each state is waited for until both apps see it.
    const until = async (overloaded: boolean): Promise<void> => {
      for (let i = 0; i < 200 && !apps.every(app => app.overloaded() === overloaded); i++) await new Promise(resolve => setTimeout(resolve, 50))
      assert.ok(apps.every(app => app.overloaded() === overloaded), `both apps ${overloaded ? '' : 'not '}overloaded`)
    }
    // Until the lane answers the cached read. Not compared: the first requests' own work (a store
    // read, a first compile) can lag the loop past the bound between the two apps' answers.
    for (let i = 0; i < 20 && metrics[0].fastLane.n === 0; i++) {
      await until(false)
      await call(pair.lane.url, 'GET', '/v1/pets/6', auth)
    }
    const before = metrics[0].fastLane.n
    assert.ok(before >= 1, 'the lane answered the cached read before the lag')
    const shed = async (m: Metrics) => Number(/^petstore_overload_rejections_total\S* (\d+)$/m.exec(await m.registry.metrics())?.[1] ?? 0)
    const shedBefore = await Promise.all(metrics.map(shed))
    // The wall clock stops for this process (the loop's delay is measured on another clock): the key
    // stays trusted by the key cache (KEY_CACHE_TTL_MS is at most 1 s) and the cached read stays the
    // lane's to answer, as in the first second of a real overload, so only the shedding can stop it.
    const realNow = Date.now
    const frozen = realNow()
    Date.now = () => frozen
    onCleanup(t, () => { Date.now = realNow })
    // The loop lags 250 ms in every turn (well past the 100 ms bound) while the requests go.
    const lag = setInterval(() => { const end = performance.now() + 250; while (performance.now() < end); }, 1)
    onCleanup(t, () => clearInterval(lag))
    await until(true)
    for (let i = 0; i < 2; i++) assert.equal((await same(pair, 'GET', '/v1/pets/6', auth)).status, 503)
    clearInterval(lag)
    Date.now = realNow
    assert.equal(metrics[0].fastLane.n, before, 'the lane answered nothing while shedding')
    assert.deepEqual((await Promise.all(metrics.map(shed))).map((n, i) => n - shedBefore[i]!), [2, 2], 'both apps counted the two shed requests')
  })
})

describe('the fast lane and the getPet sunset (in process, over HTTP)', () => {
  it('answers a cached getPet until the sunset, then leaves the 410 to Fastify, as without the lane', async (t) => {
    const s = await seed(t)
    let clock = Date.parse('2029-01-01T00:00:00Z')
    const { pair, metrics } = await inProcessPair(t, s, () => clock)
    const auth = { authorization: `Bearer ${s.keys.main}` }
    for (let i = 0; i < 3; i++) assert.equal((await same(pair, 'GET', '/v1/pets/4', auth)).status, 200)
    assert.ok(metrics[0]!.fastLane.n >= 1, 'the lane answered a cached getPet before the sunset')
    const before = metrics[0]!.fastLane.n
    clock = Date.parse('2030-12-05T00:00:00Z')
    assert.equal((await same(pair, 'GET', '/v1/pets/4', auth)).status, 410)
    assert.equal(metrics[0]!.fastLane.n, before)
    assert.equal(metrics[1]!.fastLane.n, 0)
    const counted = async (m: Metrics) => (await m.registry.metrics()).split('\n').filter(l => /^petstore_(deprecated_getpet_calls_total|read_cache_(hits|misses)_total|http_requests_total)/.test(l)).sort()
    assert.deepEqual(await counted(metrics[0]!), await counted(metrics[1]!))
  })
})

describe('the fast lane on generated requests (in process, over HTTP)', () => {
  it('answers every generated read, query and conditional header as Fastify does', async (t) => {
    const s = await seed(t)
    const { pair, metrics } = await inProcessPair(t, s, Date.now)
    const auth = { authorization: `Bearer ${s.keys.main}` }
    // Cached entries and real cursors and tags to draw from: the lane has something to answer.
    const etags: string[] = ['*', '"x"', 'W/"x"']
    const cursors: string[] = ['AAAA']
    for (const path of ['/v1/pets/1', '/v1/pets/2', '/v1/pets/25', '/v1/pets?limit=5', '/v1/pets?limit=10', '/v1/pets?status=sold&limit=3', '/v1/pets']) {
      const a = await same(pair, 'GET', path, auth)
      if (typeof a.headers.etag === 'string') etags.push(a.headers.etag, `W/${a.headers.etag}`)
      const next = LINK.exec(String(a.headers.link ?? ''))?.[1]
      if (next !== undefined) {
        cursors.push(/cursor=([^&]+)/.exec(next)![1]!)
        await same(pair, 'GET', next, auth)
      }
    }
    const before = metrics[0].fastLane.n
    // Parameters the lane reads, spelled as it reads them and as it must not (each kind often), and junk.
    const param = fc.oneof(
      { weight: 4, arbitrary: fc.oneof(fc.constantFrom('5', '10', '20', '0', '101', '020', '05', '+5', '%35', '5%20', ''), fc.nat(120).map(String)).map(v => `limit=${v}`) },
      { weight: 3, arbitrary: fc.constantFrom('available', 'sold', 'pending', 'bogus', 'Sold', '').map(v => `status=${v}`) },
      { weight: 2, arbitrary: fc.constantFrom(...cursors, '').map(v => `cursor=${v}`) },
      { weight: 1, arbitrary: fc.constantFrom('foo=1', 'Limit=5', 'limit', '=5', '') }
    )
    const listPath = fc.oneof(
      fc.constant('/v1/pets'),
      fc.tuple(fc.array(param, { minLength: 1, maxLength: 3 }), fc.constantFrom('&', '&', '&', ';')).map(([ps, sep]) => `/v1/pets?${ps.join(sep)}`)
    )
    const petPath = fc.tuple(
      fc.oneof(fc.constantFrom('1', '2', '25', '26', '0', '01', '-1', '%31', '1.0', '99999999999999999999', ''), fc.nat(30).map(String)),
      fc.constantFrom('', '', '', '/', '?', '?x=1', ';a')
    ).map(([id, tail]) => `/v1/pets/${id}${tail}`)
    const headers = fc.record({
      'if-none-match': fc.option(fc.oneof(fc.constantFrom(...etags), fc.constantFrom(...etags).map(e => `"y", ${e}`)), { nil: undefined }),
      'x-request-id': fc.option(fc.constantFrom('id-1', 'bad id'), { nil: undefined })
    })
    await fc.assert(fc.asyncProperty(fc.constantFrom('GET', 'GET', 'GET', 'HEAD'), fc.oneof(listPath, petPath), headers, async (method, path, h) => {
      const sent: Record<string, string> = { ...auth }
      for (const [k, v] of Object.entries(h)) if (v !== undefined) sent[k] = v
      await same(pair, method, path, sent)
    }), fcParams(300))
    assert.ok(metrics[0].fastLane.n > before, 'the lane answered some generated requests')
    assert.equal(metrics[1].fastLane.n, 0)
  })
})
