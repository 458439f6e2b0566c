import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { tempDir, testDatabaseUrl, type StoreKind } from '../helpers/app.js'
import { type RunningServer, runCli, startServer } from '../helpers/process.js'
import { plantPet } from '../helpers/transfer.js'

/*
 * The move, end to end through the real `petstore` binary and real servers: a store with int64
 * edge ids and categoryIds, Unicode-edge names, all statuses, a revoked key and live
 * Idempotency-Keys is exported, imported into the other kind of store and exported again.
 */

const NAMES = ['nul\u0000inside', 'astral 🐕🦖 𝄞', 'combining e\u0301 a\u0308\u0301', '\u202Ertl\u202C and \u2028 line sep', ' spaced ', 'ﬁ ligature ẞ']
const CATEGORY_IDS = ['-9223372036854775808', '9223372036854775807', '9007199254740993', '0', '-1', '9007199254740992']
const STATUSES = ['available', 'pending', 'sold']
const EDGE_IDS = [2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 62n, 2n ** 63n - 2n]

async function createKey (env: Record<string, string>, name: string): Promise<string> {
  const r = await runCli(['keys', 'create', '--name', name, '--create'], env)
  assert.equal(r.code, 0, r.stderr)
  return r.stdout.trim()
}

function api (server: RunningServer, key: string) {
  return async (path: string, init: { method?: string, body?: string, headers?: Record<string, string> } = {}) =>
    await fetch(`${server.url}${path}`, { method: init.method ?? 'GET', body: init.body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers } })
}

/** Follows rel="next" from `path`; the bodies of every page, as text (ids exact). */
async function walk (call: ReturnType<typeof api>, path: string | undefined): Promise<string[]> {
  const pages: string[] = []
  while (path !== undefined) {
    const res = await call(path)
    assert.equal(res.status, 200, await res.clone().text())
    pages.push(await res.text())
    path = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1]
  }
  return pages
}

async function stop (server: RunningServer): Promise<void> {
  server.child.kill('SIGTERM') // graceful: last-used times are flushed
  await server.exited
}

const dataLines = (path: string) => readFileSync(path, 'utf8').split('\n').slice(1)

for (const [from, to] of [['sqlite', 'postgres'], ['postgres', 'sqlite']] as Array<[StoreKind, StoreKind]>) {
  describe(`moving a store: export from ${from}, import into ${to} (black box)`, () => {
    it('keeps every pet, key and Idempotency-Key byte for byte; keys, cursors and replays work on the new store', async (t: TestContext) => {
      const dir = tempDir(t)
      const envA = { DATABASE_URL: await testDatabaseUrl(t, from, dir), RATE_LIMIT_MAX: '0' }
      const envB = { DATABASE_URL: await testDatabaseUrl(t, to, tempDir(t)), RATE_LIMIT_MAX: '0' }
      const keyA = await createKey(envA, 'team a')
      const keyB = await createKey(envA, 'team b')
      const keyC = await createKey(envA, 'leaver')
      assert.equal((await runCli(['keys', 'revoke', '3'], envA)).code, 0)

      // Pets through the API: every status, Unicode-edge names, int64-edge categoryIds, two Idempotency-Keys.
      const serverA = await startServer(t, envA)
      const callA = api(serverA, keyA)
      const bodies: string[] = []
      for (let i = 0; i < 12; i++) {
        bodies.push(`{"name":${JSON.stringify(NAMES[i % NAMES.length])},"categoryId":${CATEGORY_IDS[i % CATEGORY_IDS.length]},"status":"${STATUSES[i % 3]}"}`)
        const res = await callA('/v1/pets', { method: 'POST', body: bodies[i], headers: i < 2 ? { 'idempotency-key': `move-${i}` } : {} })
        assert.equal(res.status, 201, await res.text())
      }
      const withKeyB = await api(serverA, keyB)('/v1/pets', { method: 'POST', body: '{"name":"by b","categoryId":1}', headers: { 'idempotency-key': 'move-b' } })
      assert.equal(withKeyB.status, 201)
      const originalB = await withKeyB.text()
      const original0 = await (await callA('/v1/pets?limit=1')).text()
      // Pets at int64 edge ids, planted behind the service's back (the API assigns ids itself).
      for (const [i, id] of EDGE_IDS.entries()) await plantPet(envA.DATABASE_URL, { id, name: NAMES[i % NAMES.length]!, categoryId: BigInt(CATEGORY_IDS[i]!), status: STATUSES[i % 3]! })

      // A cursor taken before the move, and the rest of the walk as the old store gives it.
      const first = await callA('/v1/pets?limit=4&status=pending')
      const nextPath = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1]
      assert.ok(nextPath !== undefined, 'the first page has a next link')
      const restBefore = await walk(callA, nextPath)
      const everythingBefore = await walk(callA, '/v1/pets?limit=7')
      assert.equal((await api(serverA, keyC)('/v1/pets')).status, 401)
      await stop(serverA)

      const file1 = join(dir, 'from.ndjson')
      const exported = await runCli(['export', '--out', file1, '--json'], envA)
      assert.equal(exported.code, 0, exported.stderr)
      const summary = JSON.parse(exported.stdout) as { counts: Record<string, number> }
      assert.deepEqual(summary.counts, { settings: 1, apiKeys: 3, pets: 13 + EDGE_IDS.length, idempotencyKeys: 3 })
      const text = readFileSync(file1, 'utf8')
      assert.ok(text.includes('"id":9223372036854775806,'), 'int64 ids are plain exact digits')
      assert.ok(text.includes('"categoryId":-9223372036854775808,'), 'int64 categoryIds are plain exact digits')
      assert.ok(text.includes(JSON.stringify('nul\u0000inside')), 'NUL kept (escaped as JSON does)')
      for (const key of [keyA, keyB, keyC]) assert.ok(!text.includes(key.slice(4)), 'no secret in the export')

      const imported = await runCli(['import', file1, '--json'], envB)
      assert.equal(imported.code, 0, imported.stderr)
      assert.deepEqual((JSON.parse(imported.stdout) as { counts: unknown }).counts, summary.counts)

      const file2 = join(dir, 'to.ndjson')
      const again = await runCli(['export', '--out', file2], envB)
      assert.equal(again.code, 0, again.stderr)
      assert.deepEqual(dataLines(file2), dataLines(file1), 'every line after the header is byte-identical')
      const pet = (l: string) => l.startsWith('{"type":"pet"') || l.startsWith('{"type":"apiKey"')
      assert.equal(dataLines(file1).filter(pet).length, 3 + 13 + EDGE_IDS.length)

      const serverB = await startServer(t, envB)
      const callB = api(serverB, keyA)
      assert.equal((await callB('/v1/pets?limit=1')).status, 200, 'an old key authenticates on the new store')
      assert.equal(await (await callB('/v1/pets?limit=1')).text(), original0)
      assert.equal((await api(serverB, keyB)('/v1/pets?limit=1')).status, 200)
      assert.equal((await api(serverB, keyC)('/v1/pets')).status, 401, 'a revoked key stays revoked')
      assert.deepEqual(await walk(callB, nextPath), restBefore, 'a cursor from before the move walks the rest after it')
      assert.deepEqual(await walk(callB, '/v1/pets?limit=7'), everythingBefore)

      const replay = await callB('/v1/pets', { method: 'POST', body: bodies[0], headers: { 'idempotency-key': 'move-0' } })
      assert.equal(replay.status, 201)
      assert.equal(replay.headers.get('idempotent-replayed'), 'true')
      const replayB = await api(serverB, keyB)('/v1/pets', { method: 'POST', body: '{"name":"by b","categoryId":1}', headers: { 'idempotency-key': 'move-b' } })
      assert.equal(replayB.headers.get('idempotent-replayed'), 'true')
      assert.equal(await replayB.text(), originalB, 'the replay returns the original pet')

      const fresh = await callB('/v1/pets', { method: 'POST', body: '{"name":"after the move","categoryId":2}' })
      assert.equal(fresh.status, 201)
      assert.match(await fresh.text(), /^\{"id":9223372036854775807,/, 'new ids continue past the highest imported id')
    })
  })
}
