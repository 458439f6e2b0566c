import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { STORES, tempDir, testDatabaseUrl } from '../helpers/app.js'
import { metricsUrlOf, runCli, startServer, type RunningServer } from '../helpers/process.js'

/*
 * Scopes, expiry and scheduled revocation through the real binary and HTTP, on every store: keys
 * made by `petstore keys create`, requests sent to `petstore serve` (a
 * second read of a pet is a cached read).
 */

const INSUFFICIENT = (scope: string) => `Bearer realm="petstore", error="insufficient_scope", scope="${scope}"`
const EXPIRED = 'Bearer realm="petstore", error="invalid_token", error_description="the API key has expired"'
const INVALID = 'Bearer realm="petstore", error="invalid_token", error_description="the API key is invalid or revoked"'

async function createKey (env: Record<string, string>, ...args: string[]): Promise<string> {
  const r = await runCli(['keys', 'create', '--create', ...args], env)
  assert.equal(r.code, 0, r.stderr)
  return r.stdout.trim()
}

/** A key whose expiry is `expiresAt`, written to the store as `keys create` writes one. */
async function keyExpiredAt (env: { DATABASE_URL: string }, name: string, expiresAt: Date): Promise<string> {
  const store = await openStore(loadConfig(env))
  try {
    return (await createApiKey(store, name, { expiresAt }, new Date(expiresAt.getTime() - 3600_000))).key
  } finally {
    await store.close()
  }
}

interface Listed { id: number, name: string, scopes: string[], state: string, expiresAt: string | null, revokedAt: string | null }
async function listKeys (env: Record<string, string>, ...args: string[]): Promise<Listed[]> {
  const r = await runCli(['keys', 'list', '--json', ...args], env)
  assert.equal(r.code, 0, r.stderr)
  return JSON.parse(r.stdout) as Listed[]
}

function call (server: RunningServer, key: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
}

for (const store of STORES) {
  describe(`API key scopes, expiry and scheduled revocation [${store}] (real binary)`, () => {
    it('answers each scope on each operation as declared, cached and uncached reads alike, 403 with the RFC 6750 challenge before the body is read', async (t) => {
      const env = { DATABASE_URL: await testDatabaseUrl(t, store, tempDir(t)) }
      const keys = {
        read: await createKey(env, '--name', 'ro', '--scope', 'pets:read'),
        write: await createKey(env, '--name', 'wo', '--scope', 'pets:write'),
        both: await createKey(env, '--name', 'rw')
      }
      assert.deepEqual((await listKeys(env)).map(k => [k.name, k.scopes, k.state]),
        [['ro', ['pets:read'], 'active'], ['wo', ['pets:write'], 'active'], ['rw', ['pets:read', 'pets:write'], 'active']])
      // The failed-authentication limit of 2 per address: the 403s below must not count against it.
      const server = await startServer(t, { ...env, METRICS_PORT: '0', RATE_LIMIT_ANON_MAX: '2' })
      const expected: Record<keyof typeof keys, { read: number, create: number, orders: number }> = {
        read: { read: 200, create: 403, orders: 501 },
        write: { read: 403, create: 201, orders: 403 },
        both: { read: 200, create: 201, orders: 501 }
      }
      for (const [name, key] of Object.entries(keys) as Array<[keyof typeof keys, string]>) {
        const want = expected[name]
        const created = await call(server, keys.both, 'POST', '/v1/pets', { name: `for ${name}`, categoryId: 1 })
        assert.equal(created.status, 201)
        const id = (await created.json() as { id: number }).id
        // The first read of the pet and of the page is a miss, the second a cached read.
        for (const round of ['uncached', 'cached']) {
          for (const path of [`/v1/pets/${id}`, '/v1/pets?limit=100']) {
            const res = await call(server, key, 'GET', path)
            assert.equal(res.status, want.read, `${name} GET ${path} (${round})`)
            if (want.read === 403) {
              assert.equal(res.headers.get('www-authenticate'), INSUFFICIENT('pets:read'))
              const body = await res.json() as { code: string, status: number }
              assert.deepEqual([body.code, body.status], ['insufficient_scope', 403])
            }
          }
        }
        // A body that would fail validation: a key without the scope is refused before it is read.
        const bad = await call(server, key, 'POST', '/v1/pets', { id: 1 })
        assert.equal(bad.status, want.create === 403 ? 403 : 400, `${name} POST with an invalid body`)
        const create = await call(server, key, 'POST', '/v1/pets', { name: 'Rex', categoryId: 2 })
        assert.equal(create.status, want.create, `${name} POST /v1/pets`)
        if (want.create === 403) assert.equal(create.headers.get('www-authenticate'), INSUFFICIENT('pets:write'))
        assert.equal((await call(server, key, 'GET', '/v1/store/orders')).status, want.orders, `${name} GET /v1/store/orders`)
      }
      // Authenticated all along: no address was blocked by the 403s.
      assert.equal((await call(server, keys.read, 'GET', '/v1/pets')).status, 200)

      const metrics = await (await fetch(await metricsUrlOf(server))).text()
      const refused = /^petstore_auth_refusals_total\{reason="insufficient_scope"\} (\d+)$/m.exec(metrics)
      // The read key's two creates, the write key's four reads and its orders.
      assert.equal(Number(refused?.[1]), 2 + 4 + 1, metrics.split('\n').filter(l => l.includes('auth_refusals')).join('\n'))
      for (const key of Object.values(keys)) assert.equal(metrics.includes(key.slice(4, 20)), false, 'no key material in the metrics')
    })

    it('answers an expired key 401 key_expired and a revoked one 401 on two instances, and keeps a key to be revoked later working', async (t) => {
      const env = { DATABASE_URL: await testDatabaseUrl(t, store, tempDir(t)) }
      assert.equal((await runCli(['migrate'], env)).code, 0)
      // The CLI takes only a future expiry, so the expired key is written to the store directly.
      // The instants themselves (a key works until T - 1 ms, not at T) are tested in-process, by the
      // app's clock (test/plugins/auth.test.ts).
      const expired = await keyExpiredAt(env, 'brief', new Date(Date.now() - 60_000))
      const revoked = await createKey(env, '--name', 'old')
      const later = await createKey(env, '--name', 'later')
      const ids = Object.fromEntries((await listKeys(env)).map(k => [k.name, k.id]))
      const now = await runCli(['keys', 'revoke', String(ids.old)], env)
      assert.equal(now.code, 0, now.stderr)
      const scheduled = await runCli(['keys', 'revoke', String(ids.later), '--after', '1h'], env)
      assert.equal(scheduled.code, 0, scheduled.stderr)
      assert.match(scheduled.stderr, new RegExp(`^petstore: store: .*\\nkey ${ids.later} will be revoked at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z; it works until then\\n$`))
      assert.deepEqual((await listKeys(env)).map(k => [k.name, k.state]), [['brief', 'expired'], ['old', 'revoked'], ['later', 'active']])
      assert.deepEqual((await listKeys(env, '--expired')).map(k => k.name), ['brief'])
      assert.deepEqual((await listKeys(env, '--active')).map(k => k.name), ['later'])

      for (const server of [await startServer(t, env), await startServer(t, env)]) {
        const refused = await call(server, expired, 'GET', '/v1/pets')
        assert.equal(refused.status, 401)
        assert.equal(refused.headers.get('www-authenticate'), EXPIRED)
        assert.deepEqual(await refused.json(), { code: 'key_expired', message: 'the API key has expired', status: 401 })
        const gone = await call(server, revoked, 'GET', '/v1/pets')
        assert.equal(gone.status, 401)
        assert.equal(gone.headers.get('www-authenticate'), INVALID)
        assert.deepEqual(await gone.json(), { code: 'unauthorized', message: 'the API key is invalid or revoked', status: 401 })
        assert.equal((await call(server, later, 'GET', '/v1/pets')).status, 200)
      }
    })
  })
}

describe('petstore copy keeps a key\'s scopes and expiry (real binary)', () => {
  it('a read-only key with an expiry, copied from SQLite to PostgreSQL, lists and cannot create there', async (t) => {
    const source = { DATABASE_URL: await testDatabaseUrl(t, 'sqlite') }
    const target = { DATABASE_URL: await testDatabaseUrl(t, 'postgres') }
    const key = await createKey(source, '--name', 'dashboard', '--scope', 'pets:read', '--expires', '2099-01-31T12:00:00Z')
    const copied = await runCli(['copy', '--to', target.DATABASE_URL], source)
    assert.equal(copied.code, 0, copied.stderr)
    const [before, after] = [await listKeys(source), await listKeys(target)]
    assert.deepEqual(after, before)
    assert.deepEqual([after[0]!.scopes, after[0]!.expiresAt], [['pets:read'], '2099-01-31T12:00:00.000Z'])
    const server = await startServer(t, target)
    assert.equal((await call(server, key, 'GET', '/v1/pets')).status, 200)
    assert.equal((await call(server, key, 'POST', '/v1/pets', { name: 'Rex', categoryId: 1 })).status, 403)
  })
})

describe('petstore keys: WHEN, DURATION and scope parsing (real binary)', () => {
  it('refuses a bad value with exit 2 naming the allowed forms, and creates nothing', async (t) => {
    const env = { DATABASE_URL: `sqlite:${tempDir(t)}/petstore.db` }
    assert.equal((await runCli(['migrate'], env)).code, 0)
    const cases: Array<[string[], RegExp]> = [
      ...['tomorrow', '90', '1.5h', '2y', '0s', '-5m', '2027-02-30', '2027-01-31T12:00', '2027-01-31 12:00Z', '2027-01-31T25:00Z'].map(when =>
        [['keys', 'create', '--name', 'x', '--expires', when], /WHEN must be an ISO 8601 UTC date or time \(2027-01-31, 2027-01-31T12:00:00Z, 2027-01-31T13:00\+01:00\) or a duration from now \(whole number of seconds, minutes, hours or days: 30s, 15m, 12h, 90d\)/] as [string[], RegExp]),
      [['keys', 'create', '--name', 'x', '--expires', '2020-01-01'], /argument names 2020-01-01T00:00:00.000Z, which is not in the future/],
      [['keys', 'create', '--name', 'x', '--scope', 'pets:admin'], /SCOPE must be one of pets:read, pets:write/],
      [['keys', 'create', '--name', 'x', '--scope', 'pets:read,'], /SCOPE must be one of pets:read, pets:write/],
      ...['4', '1w', '1.5h', '0m', '99999999999d'].map(d => [['keys', 'revoke', '1', '--after', d], /DURATION must be a whole number of seconds, minutes, hours or days: 30s, 15m, 12h, 90d/] as [string[], RegExp]),
      [['keys', 'list', '--active', '--expired'], /--active and --expired exclude each other/]
    ]
    for (const [args, stderr] of cases) {
      const r = await runCli(args, env)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, stderr, args.join(' '))
      assert.equal(r.stdout, '')
    }
    assert.deepEqual(await listKeys(env), [])

    // The forms it takes; a revocation only moves earlier (exit 3 when asked for a later one).
    await createKey(env, '--name', 'a', '--scope', 'pets:write', '--scope', 'pets:read', '--expires', '2099-06-01T02:00+02:00')
    await createKey(env, '--name', 'b', '--scope', 'pets:write,pets:read', '--expires', '90d')
    const [a, b] = await listKeys(env)
    assert.deepEqual([a!.scopes, a!.expiresAt], [['pets:read', 'pets:write'], '2099-06-01T00:00:00.000Z'])
    assert.ok(Math.abs(Date.parse(b!.expiresAt!) - Date.now() - 90 * 86_400_000) < 60_000, b!.expiresAt!)
    assert.equal((await runCli(['keys', 'revoke', '1', '--after', '2h'], env)).code, 0)
    const later = await runCli(['keys', 'revoke', '1', '--after', '3h'], env)
    assert.equal(later.code, 3)
    assert.match(later.stderr, /key 1 \(a\) is already to be revoked at .*, no later than asked; nothing to do/)
    assert.equal((await runCli(['keys', 'revoke', '1'], env)).code, 0)
    assert.equal((await listKeys(env))[0]!.state, 'revoked')
    assert.equal((await runCli(['keys', 'revoke', '1', '--after', '1h'], env)).code, 3)
  })
})
