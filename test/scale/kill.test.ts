// requires: postgresql, pgbouncer
import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { describe, it } from 'node:test'
import pg from 'pg'
import { PG_ROUTES, createTestDatabase, testClusterUrl } from '../helpers/app.js'
import { runCli, startServer, type RunningServer } from '../helpers/process.js'
import { onCleanup } from '../helpers/cleanup.js'

const WRITERS = 8
const KILL_AFTER_ACKS = 150

interface Answer { status: number, body: string, replayed: boolean }

/** One createPet with an Idempotency-Key. */
function create (agent: Agent | false, base: string, key: string, idemKey: string, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/pets`, {
      method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idemKey }
    }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (s: string) => { text += s }).on('error', reject)
        .on('end', () => resolve({ status: res.statusCode!, body: text, replayed: res.headers['idempotent-replayed'] === 'true' }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Follows rel="next" from the first page to the last through one instance. */
async function walk (base: string, key: string): Promise<Array<{ id: number, name: string, categoryId: number }>> {
  const pets: Array<{ id: number, name: string, categoryId: number }> = []
  let path: string | undefined = '/v1/pets?limit=40'
  while (path !== undefined) {
    const res: Response = await fetch(base + path, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(res.status, 200)
    pets.push(...await res.json() as typeof pets)
    path = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1]
  }
  return pets
}

for (const route of PG_ROUTES) {
  describe(`an instance killed mid-load over PostgreSQL [${route}]`, () => {
    it('loses no acknowledged create, leaves nothing half-written, and honours Idempotency-Keys on retry through another instance', async (t) => {
      const servers: RunningServer[] = []
      const url = await createTestDatabase(t, async () => {
        await Promise.all(servers.filter(s => s.child.exitCode === null && s.child.signalCode === null)
          .map(async (s) => { s.child.kill('SIGTERM'); await s.exited }))
      }, route)
      const env = { DATABASE_URL: url, RATE_LIMIT_MAX: '0' }
      const created = await runCli(['keys', 'create', '--name', 'kill'], env)
      assert.equal(created.code, 0, created.stderr)
      const key = created.stdout.trim()
      const [victim, survivor] = await Promise.all([startServer(t, env), startServer(t, env)])
      servers.push(victim!, survivor!)

      // Writers through the victim, each create with an Idempotency-Key of its own, until the kill.
      const acked = new Map<string, number>() // name → id, for 201s only
      const unanswered: Array<{ name: string, idemKey: string, body: string }> = []
      let killed = false
      const agent = new Agent({ keepAlive: true, maxSockets: WRITERS })
      onCleanup(t, () => agent.destroy())
      await Promise.all(Array.from({ length: WRITERS }, async (_, w) => {
        for (let n = 0; ; n++) {
          const name = `w${w}-${n}`
          const idemKey = `kill-${w}-${n}`
          const body = JSON.stringify({ name, categoryId: w * 1_000_000 + n })
          let res: Answer
          try {
            res = await create(agent, victim!.url, key, idemKey, body)
          } catch {
            // The instance is gone: this create was never acknowledged; it may or may not have committed.
            unanswered.push({ name, idemKey, body })
            return
          }
          assert.equal(res.status, 201, res.body)
          acked.set(name, (JSON.parse(res.body) as { id: number }).id)
          if (!killed && acked.size >= KILL_AFTER_ACKS) {
            killed = true
            victim!.child.kill('SIGKILL')
          }
        }
      }))
      assert.equal((await victim!.exited).signal, 'SIGKILL')
      assert.ok(acked.size >= KILL_AFTER_ACKS)
      assert.equal(unanswered.length, WRITERS, 'each writer ends on the request the kill cut')

      // Through the survivor: every acknowledged pet, with its id, once; a walk in strictly ascending
      // id order; at most the cut requests stored beyond the acknowledged ones.
      const before = await walk(survivor!.url, key)
      const ids = before.map(p => p.id)
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'the walk is in ascending id order')
      assert.equal(new Set(ids).size, ids.length, 'an id is listed twice')
      const byName = new Map(before.map(p => [p.name, p.id]))
      assert.equal(byName.size, before.length, 'a pet is stored twice')
      for (const [name, id] of acked) assert.equal(byName.get(name), id, `acknowledged pet ${name} (id ${id}) is missing`)
      const cutNames = new Set(unanswered.map(u => u.name))
      for (const p of before) assert.ok(acked.has(p.name) || cutNames.has(p.name), `pet ${p.name} was never sent`)

      // A client retrying the cut requests with their Idempotency-Keys through the survivor: a create
      // that committed before the kill is replayed (same id), one that did not is made now; either
      // way exactly one pet per request. An acknowledged one retried is replayed too.
      for (const u of unanswered) {
        const res = await create(false, survivor!.url, key, u.idemKey, u.body)
        assert.equal(res.status, 201, res.body)
        const pet = JSON.parse(res.body) as { id: number, name: string }
        assert.equal(pet.name, u.name)
        const stored = byName.get(u.name)
        if (stored !== undefined) {
          assert.equal(res.replayed, true, `${u.name} committed before the kill: its retry is a replay`)
          assert.equal(pet.id, stored)
        } else {
          assert.equal(res.replayed, false)
        }
      }
      const [firstName, firstId] = [...acked][0]!
      const [w, n] = firstName.slice(1).split('-')
      const again = await create(false, survivor!.url, key, `kill-${w}-${n}`, JSON.stringify({ name: firstName, categoryId: Number(w) * 1_000_000 + Number(n) }))
      assert.deepEqual([again.status, again.replayed, (JSON.parse(again.body) as { id: number }).id], [201, true, firstId])

      const after = await walk(survivor!.url, key)
      assert.deepEqual(after.map(p => p.name).sort(), [...acked.keys(), ...cutNames].sort(), 'exactly one pet per request sent')

      // Nothing the killed instance had open survives it: no transaction, no advisory lock on the
      // database (the survivor's creates above took the insert lock, so none was stuck either).
      const db = new URL(url).pathname.slice(1)
      const admin = new pg.Client({ connectionString: testClusterUrl() })
      await admin.connect()
      onCleanup(t, () => admin.end())
      const open = await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND state LIKE \'idle in transaction%\'', [db])
      const locks = await admin.query('SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = $1 AND l.locktype = \'advisory\'', [db])
      assert.deepEqual([open.rows[0].n, locks.rows[0].n], [0, 0])
    })
  })
}
