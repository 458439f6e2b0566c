import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import fc from 'fast-check'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { Metrics } from '../../src/observability/metrics.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import type { Tracing } from '../../src/observability/tracing.js'
import { tempDir } from './app.js'
import { onCleanup } from './cleanup.js'
import { fcParams } from './property.js'

/*
 * Two apps that differ in one setting (CORS on or off, tracing on or off), on copies of one
 * database (same keys, pets and cursor key), get the same requests one after the other over HTTP;
 * every answer must be the same, apart from what differs between any two answers (Date, a generated
 * request id, the seconds left in a rate-limit window) and the CORS headers themselves; then their
 * access lines (without the span's ids) and metrics must be the same.
 */

export interface Answer { status: number, headers: Record<string, string | string[] | undefined>, body: string }
export type Headers = Record<string, string> | string[]

/** One request on a fresh connection; `headers` as an object or as raw name/value pairs (to repeat one). */
export function call (base: string, method: string, path: string, headers: Headers = {}, body?: string): Promise<Answer> {
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

/**
 * An answer without what differs between any two answers of one server too, and without the CORS
 * headers (Access-Control-*, and the Origin CORS adds to Vary), the one difference CORS makes.
 */
function comparable (a: Answer): Answer {
  const headers = { ...a.headers }
  for (const name of Object.keys(headers)) if (name.startsWith('access-control-')) delete headers[name]
  if (headers.vary !== undefined) {
    const rest = String(headers.vary).split(', ').filter(v => v !== 'Origin').join(', ')
    if (rest === '') delete headers.vary
    else headers.vary = rest
  }
  delete headers.date
  delete headers.connection
  delete headers['keep-alive']
  if (typeof headers['x-request-id'] === 'string' && UUID.test(headers['x-request-id'])) headers['x-request-id'] = '(generated)'
  if (typeof headers.ratelimit === 'string') headers.ratelimit = headers.ratelimit.replace(/;t=\d+$/, ';t=(s)')
  if (headers['retry-after'] !== undefined && a.status === 429) headers['retry-after'] = '(s)'
  return { status: a.status, headers, body: a.status === 429 ? a.body.replace(/\d+ s\b/, '(s) s') : a.body }
}

/** The two apps' base URLs, their metrics and the log lines they wrote; the first is the one with the feature on. */
export interface Pair { urls: [string, string], metrics: [Metrics, Metrics], logs: [string[], string[]] }

/** The same request to both servers (the first's first), the answers compared; the first's answer is returned. */
export async function same (pair: Pair, method: string, path: string, headers: Headers = {}, body?: string): Promise<Answer> {
  const a = await call(pair.urls[0], method, path, headers, body)
  const b = await call(pair.urls[1], method, path, headers, body)
  assert.deepEqual(comparable(a), comparable(b), `${method} ${path} ${JSON.stringify(headers)}`)
  return a
}

/** The series both apps must agree on: every request, rate-limit, getPet and read-cache count (latency: only how many). */
export async function countedSeries (metrics: Metrics): Promise<string[]> {
  const text = await metrics.registry.metrics()
  return text.split('\n').filter(l => /^petstore_(http_requests_total|http_request_duration_seconds_count|rate_limited_total|deprecated_getpet_calls_total|read_cache_(hits|misses)_total|overload_rejections_total|store_errors_total)/.test(l)).sort()
}

/**
 * The access lines a server wrote, without what differs between runs (time, pid, latency, a
 * generated id) and the ids of the request's span while tracing (trace_id, span_id, trace_flags).
 */
export function accessLines (lines: string[]): unknown[] {
  return lines.join('').split('\n').filter(l => l.includes('"msg":"request completed"')).map(l => {
    const { time, pid, ms, trace_id: _t, span_id: _s, trace_flags: _f, ...rest } = JSON.parse(l) as Record<string, unknown>
    assert.equal(typeof time, 'number')
    assert.equal(typeof pid, 'number')
    assert.equal(typeof ms, 'number')
    return { ...rest, reqId: UUID.test(String(rest.reqId)) ? '(generated)' : rest.reqId }
  })
}

export interface Seeded { db: string, keys: Record<'main' | 'refusals' | 'limited' | 'later' | 'revoked' | 'reader' | 'writer', string>, laterId: number }

/** A database with keys, 25 pets and the cursor key, copied for the second server. */
export async function seed (t: TestContext): Promise<Seeded & { copy: string }> {
  const dir = tempDir(t)
  const db = join(dir, 'on.db')
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
  const copy = join(dir, 'off.db')
  copyFileSync(db, copy)
  for (const ext of ['-wal', '-shm']) if (existsSync(db + ext)) copyFileSync(db + ext, copy + ext)
  return { db, copy, keys: keys as Seeded['keys'], laterId }
}

export async function revoke (db: string, id: number): Promise<void> {
  const store = await openStore(loadConfig({ DATABASE_URL: `sqlite:${db}` }))
  try {
    assert.ok(await store.revokeApiKey(id, new Date()))
  } finally {
    await store.close()
  }
}

const LINK = /<([^>]+)>; rel="next"/

/** How one app of a pair is made: its environment beyond the database, and tracing. */
export interface Variant { env?: Record<string, string>, tracing?: Tracing }

/** The two apps, in this process on the two databases, listening on loopback, each logging at info into an array of its own. */
export async function inProcessPair (t: TestContext, s: Seeded & { copy: string }, variants: [Variant, Variant], env: Record<string, string> = {}): Promise<Pair> {
  const urls: string[] = []
  const metrics: Metrics[] = []
  const logs: string[][] = []
  for (const [db, variant] of [[s.db, variants[0]], [s.copy, variants[1]]] as const) {
    const config = loadConfig({ DATABASE_URL: `sqlite:${db}`, EVENT_LOOP_MAX_DELAY_MS: '0', ...env, ...variant.env })
    const tracing = variant.tracing
    const opened = await openStore(config)
    const store = tracing === undefined ? opened : tracing.traceStore(opened)
    onCleanup(t, () => store.close())
    const m = new Metrics(store)
    const lines: string[] = []
    const logger = { level: 'info', ...(tracing === undefined ? {} : { mixin: tracing.mixin }), stream: { write: (line: string) => { lines.push(line) } } }
    const app = await buildApp({ config, store, metrics: m, logger, tracing })
    onCleanup(t, () => app.close())
    await app.listen({ host: '127.0.0.1', port: 0 })
    urls.push(`http://127.0.0.1:${(app.server.address() as { port: number }).port}`)
    metrics.push(m)
    logs.push(lines)
  }
  return { urls: urls as [string, string], metrics: metrics as [Metrics, Metrics], logs: logs as [string[], string[]] }
}

/** The rate limits exercise() runs against (pass as the pair's env). */
export const EXERCISE_ENV = { RATE_LIMIT_MAX: '150', RATE_LIMIT_ANON_MAX: '30', KEY_CACHE_TTL_MS: '1000' }

/**
 * Reads, misses, 304s, bad queries and paths, bad keys, scopes, a key's limit and an address block,
 * each sent to both apps and compared; then their counts and access lines.
 */
export async function exercise (pair: Pair, s: Seeded & { copy: string }): Promise<void> {
  const max = Number(EXERCISE_ENV.RATE_LIMIT_MAX)
  const auth = { authorization: `Bearer ${s.keys.main}` }

  // Misses (the store read), then a pet that does not exist.
  for (const path of ['/v1/pets/7', '/v1/pets?limit=6', '/v1/pets?status=pending&limit=100', '/v1/pets/99']) await same(pair, 'GET', path, auth)

  // Reads: a miss (the store), then hits (the read cache), getPet and pages (a full one is cached, the last is not).
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

  // Refusals, and spellings the router and the routes' schemas take, under a key of their own.
  const ref = { authorization: `Bearer ${s.keys.refusals}` }
  const sent = async (method: string, path: string, headers: Headers = ref, body?: string): Promise<void> => { await same(pair, method, path, headers, body) }
  for (const path of [
    '/v1/pets?limit=0', '/v1/pets?limit=101', '/v1/pets?limit=020', '/v1/pets?limit=20&limit=20',
    '/v1/pets?limit=', '/v1/pets?limit', '/v1/pets?foo=1', '/v1/pets?status=bogus',
    '/v1/pets?status=sold&status=sold', '/v1/pets?cursor=AAAA', '/v1/pets?cursor=', '/v1/pets?cursor=a%2Bb', '/v1/pets?limit=+20',
    '/v1/pets/', '/v1/pets/01', '/v1/pets/0', '/v1/pets/-1', '/v1/pets/1.0', '/v1/pets/%ZZ', '/v1/pets?limit=%ZZ',
    '/v1/pets/99999999999999999999', '/v1/pets//1', '/v1//pets/1', '/V1/pets/1', '/v1/pets/1/', '/v1/pets/1;x',
    '/v1/pets/1#x', `/v1/pets?cursor=${'a'.repeat(8200)}`,
    '/v1/pets?limit=%32%30', '/v1/pets?', '/v1/pets?limit=20&', '/v1/pets/%31', '/v1/pets/1?x=1'
  ]) await sent('GET', path)
  await sent('HEAD', '/v1/pets/1')
  await sent('HEAD', '/v1/pets')
  await sent('DELETE', '/v1/pets/1')
  await sent('GET', '/v1/pets/1', { ...ref, expect: '100-continue' })
  await sent('GET', '/v1/pets/1', { ...ref, expect: 'something' })
  await sent('GET', '/v1/pets/1', { ...ref, 'content-length': '2' }, '{}')
  await sent('GET', '/v1/pets/1', { ...ref, 'transfer-encoding': 'chunked' }, '')
  await sent('GET', '/v1/pets/1', { ...ref, 'if-match': '"stale"' })
  await sent('GET', '/v1/pets/1', { ...ref, 'accept-version': '1.x' })
  await sent('GET', '/v1/pets/1', ['host', 'a', 'host', 'b', 'authorization', ref.authorization])
  await sent('GET', '/v1/pets/1', ['host', 'user@a', 'authorization', ref.authorization])

  // Scopes: a read-only key reads; a write-only key gets 403, first verified, then trusted by the key cache.
  const reader = { authorization: `Bearer ${s.keys.reader}` }
  const writer = { authorization: `Bearer ${s.keys.writer}` }
  await same(pair, 'GET', '/v1/pets/1', reader)
  await same(pair, 'GET', '/v1/pets/1', writer)
  await same(pair, 'GET', '/v1/pets/1', reader)
  await same(pair, 'GET', '/v1/pets?limit=10', reader)
  await sent('GET', '/v1/pets/1', writer)
  await sent('GET', '/v1/pets?limit=10', writer)
  assert.equal((await same(pair, 'GET', '/v1/pets/1', writer)).status, 403)

  // Request ids, an empty body, an Origin, a repeated Authorization.
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

  // The same counts: requests by route and status, latency counts, limits, getPet calls, cache hits and misses.
  assert.deepEqual(await countedSeries(pair.metrics[0]), await countedSeries(pair.metrics[1]))

  // Last: an address over its failed-authentication budget.
  for (let i = 0; i < 32; i++) await same(pair, 'GET', '/v1/pets/1', { authorization: `Bearer psk_${'B'.repeat(43)}` })
  await same(pair, 'GET', '/v1/pets/1', auth)
  await same(pair, 'GET', '/v1/pets/1', { authorization: 'Bearer nope' })

  // The same access lines, in the same order.
  const lines = accessLines(pair.logs[0])
  assert.ok(lines.length > 150, `${lines.length} access lines`)
  assert.deepEqual(lines, accessLines(pair.logs[1]))
}

/** Generated reads, queries and conditional headers, each sent to both apps and compared. */
export async function generated (pair: Pair, s: Seeded): Promise<void> {
  const auth = { authorization: `Bearer ${s.keys.main}` }
  // Cached entries and real cursors and tags to draw from.
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
  // Parameters spelled as the schemas take them and as they refuse them (each kind often), and junk.
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
}
