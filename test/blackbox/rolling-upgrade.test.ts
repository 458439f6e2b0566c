// requires: postgresql
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { ResponseChecker } from '../../src/contract/response-check.js'
import { createTestDatabase } from '../helpers/app.js'
import { conformance } from '../helpers/conformance.js'
import { historyMissing, previousBuild } from '../helpers/previous-build.js'
import { runCli, startServer } from '../helpers/process.js'

/*
 * A rolling upgrade (docs/explanation/scaling.md): the build before the newest PostgreSQL migration
 * serves, the current build's migration is applied under it, then both builds serve together over the
 * one database while a client alternates between them. Every answer must be what the build that gave
 * it promises in its own document, and a success: nothing either build promises is refused.
 */

interface Instance { name: string, url: string, check: (res: Seen) => void }
interface Seen { method: string, url: string, status: number, headers: Record<string, string>, body: string }

async function call (inst: Instance, method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}): Promise<Seen> {
  const res = await fetch(`${inst.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const seen = { method, url: path, status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() }
  try {
    inst.check(seen)
  } catch (err) {
    throw new Error(`${inst.name}: ${(err as Error).message}`)
  }
  return seen
}

function expectStatus (inst: Instance, seen: Seen, status: number): void {
  assert.equal(seen.status, status, `${inst.name}: ${seen.method} ${seen.url} → ${seen.status} ${seen.body.slice(0, 300)}`)
}

describe('a rolling upgrade over one PostgreSQL database (black box)', () => {
  it('the previous build and the current one serve together, before, during and after the migration', async (t) => {
    const missing = await historyMissing()
    if (missing !== undefined) {
      // A copy of the project without its git history has no previous build to take.
      assert.notEqual(process.env.CI, 'true', `the rolling-upgrade test needs the project's git history: ${missing}`)
      t.skip(missing)
      return
    }
    const previous = await previousBuild()
    const env = { DATABASE_URL: await createTestDatabase(t) }

    // The previous build makes the schema it knows and a key, and serves.
    const migrated = await runCli(['migrate'], env, undefined, { cli: previous.cli })
    assert.equal(migrated.code, 0, migrated.stderr)
    const made = await runCli(['keys', 'create', '--name', 'before-upgrade'], env, undefined, { cli: previous.cli })
    assert.equal(made.code, 0, made.stderr)
    const oldKey = made.stdout.trim()
    // A build that may predate the line logged once /v1 is served; on PostgreSQL it serves once it listens.
    const oldServer = await startServer(t, { ...env, SHUTDOWN_DELAY_MS: '0' }, [previous.server], { untilServing: false })
    const checkOld = new ResponseChecker(previous.document, { source: 'the previous build\'s openapi/openapi.json', refuseUndocumentedHeaders: true })
    const old: Instance = { name: `previous build (${previous.commit.slice(0, 12)})`, url: oldServer.url, check: (res) => checkOld.check(res) }

    // A client keeps creating and reading on the previous build while the current build migrates.
    const run = randomBytes(3).toString('hex')
    const created: Array<{ id: string, name: string }> = []
    let migrating = true
    let during = 0
    const traffic = (async () => {
      for (let i = 0; migrating || i < 3; i++) {
        if (migrating) during++
        const res = await call(old, 'POST', '/v1/pets', oldKey, { name: `rolling-${run}-${i}`, categoryId: 1 })
        expectStatus(old, res, 201)
        const pet = JSON.parse(res.body) as { id: number, name: string }
        created.push({ id: String(pet.id), name: pet.name })
        expectStatus(old, await call(old, 'GET', `/v1/pets/${pet.id}`, oldKey), 200)
        expectStatus(old, await call(old, 'GET', '/v1/pets?limit=5', oldKey), 200)
      }
    })()
    const upgrade = await runCli(['migrate'], env)
    migrating = false
    await traffic
    assert.equal(upgrade.code, 0, upgrade.stderr)
    assert.match(upgrade.stderr, /applied migrations: [1-9]/, 'the current build had a migration to apply')
    assert.ok(during > 0, 'the previous build was serving when the migration started')

    // The current build joins, over the migrated database; a key made by each build works on both.
    const newServer = await startServer(t, env)
    const current: Instance = { name: 'current build', url: newServer.url, check: (res) => conformance().check(res) }
    const newKeyMade = await runCli(['keys', 'create', '--name', 'after-upgrade'], env)
    assert.equal(newKeyMade.code, 0, newKeyMade.stderr)
    const keys = [oldKey, newKeyMade.stdout.trim()]
    const both = [old, current]

    // Creates alternate between the instances; each pet is read on the other one, with each key.
    for (let i = 0; i < 8; i++) {
      const [here, there] = i % 2 === 0 ? [old, current] : [current, old]
      const key = keys[Math.floor(i / 2) % 2]!
      const res = await call(here, 'POST', '/v1/pets', key, { name: `rolling-${run}-both-${i}`, categoryId: 2, status: 'pending' })
      expectStatus(here, res, 201)
      const pet = JSON.parse(res.body) as { id: number }
      created.push({ id: String(pet.id), name: `rolling-${run}-both-${i}` })
      const read = await call(there, 'GET', `/v1/pets/${pet.id}`, key)
      expectStatus(there, read, 200)
      assert.deepEqual(JSON.parse(read.body), JSON.parse(res.body))
    }

    // An Idempotency-Key used on one instance is replayed by the other.
    for (const [first, second] of [[old, current], [current, old]] as const) {
      const idempotencyKey = `rolling-${run}-${first === old ? 'a' : 'b'}`
      const body = { name: `rolling-${run}-${idempotencyKey}`, categoryId: 3 }
      const a = await call(first, 'POST', '/v1/pets', keys[0]!, body, { 'idempotency-key': idempotencyKey })
      expectStatus(first, a, 201)
      const b = await call(second, 'POST', '/v1/pets', keys[0]!, body, { 'idempotency-key': idempotencyKey })
      expectStatus(second, b, 201)
      assert.equal(b.headers['idempotent-replayed'], 'true', `${second.name} replays the create made on ${first.name}`)
      assert.deepEqual(JSON.parse(b.body), JSON.parse(a.body))
      created.push({ id: String((JSON.parse(a.body) as { id: number }).id), name: body.name })
    }

    // Cursor walks started on one instance and continued on the other, page by page, with and
    // without a filter: every pet once, none missing.
    for (const filter of ['', '&status=pending']) {
      for (const start of [0, 1]) {
        const seen: string[] = []
        let path: string | undefined = `/v1/pets?limit=3${filter}`
        for (let page = 0; path !== undefined; page++) {
          const inst = both[(start + page) % 2]!
          const res = await call(inst, 'GET', path, keys[page % 2]!)
          expectStatus(inst, res, 200)
          for (const pet of JSON.parse(res.body) as Array<{ id: number }>) seen.push(String(pet.id))
          path = /<([^>]+)>; rel="next"/.exec(res.headers.link ?? '')?.[1]
          assert.ok(page < 100, 'the walk ends')
        }
        const expected = filter === '' ? created.map(c => c.id) : created.filter(c => c.name.includes('-both-')).map(c => c.id)
        assert.equal(new Set(seen).size, seen.length, `no pet twice (filter ${filter || 'none'}, started on ${both[start]!.name})`)
        assert.deepEqual([...seen].sort(), [...expected].sort(), `every pet once (filter ${filter || 'none'}, started on ${both[start]!.name})`)
      }
    }

    // Conditional reads: an ETag from one instance is current on the other.
    const id = created[0]!.id
    const tagged = await call(old, 'GET', `/v1/pets/${id}`, keys[1]!)
    const again = await call(current, 'GET', `/v1/pets/${id}`, keys[1]!, undefined, { 'if-none-match': tagged.headers.etag! })
    const back = await call(old, 'GET', `/v1/pets/${id}`, keys[0]!, undefined, { 'if-none-match': (await call(current, 'GET', `/v1/pets/${id}`, keys[0]!)).headers.etag! })
    expectStatus(current, again, 304)
    expectStatus(old, back, 304)
  })
})
