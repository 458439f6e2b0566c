// requires: postgresql, pgbouncer
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PG_ROUTES, createTestDatabase } from '../helpers/app.js'
import { runCli, startServer, type RunningServer } from '../helpers/process.js'

interface PetBody { id: number, name: string, categoryId: number, status: string }

async function call (base: string, path: string, key: string, init: RequestInit = {}): Promise<{ status: number, body: unknown, link: string | null }> {
  const res = await fetch(base + path, { ...init, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers } })
  return { status: res.status, body: await res.json(), link: res.headers.get('link') }
}

/** Follows rel="next" from page to page, asking a different instance for each page. */
async function walk (servers: RunningServer[], key: string, first: string): Promise<number[]> {
  const ids: number[] = []
  let path: string | undefined = first
  for (let i = 0; path !== undefined; i++) {
    const page = await call(servers[i % servers.length]!.url, path, key)
    assert.equal(page.status, 200)
    ids.push(...(page.body as PetBody[]).map(p => p.id))
    path = /^<([^>]+)>; rel="next"$/.exec(page.link ?? '')?.[1]
  }
  return ids
}

for (const route of PG_ROUTES) {
  describe(`several instances over one PostgreSQL [${route}]`, () => {
    it('share pets, pages, keys and revocations', async (t) => {
      const servers: RunningServer[] = []
      const url = await createTestDatabase(t, async () => {
        await Promise.all(servers.map(async (s) => { s.child.kill('SIGTERM'); await s.exited }))
      }, route)
      const env = { DATABASE_URL: url }

      // All start at once on an empty database: the migrations must not race.
      servers.push(...await Promise.all([1, 2, 3].map(async () => await startServer(t, env))))

      const created = await runCli(['keys', 'create', '--name', 'scale'], env)
      assert.equal(created.code, 0, created.stderr)
      const key = created.stdout.trim()
      const keyId = /created key (\d+)/.exec(created.stderr)![1]!

      // Concurrent creates through every instance.
      const made = await Promise.all(Array.from({ length: 90 }, async (_, i) => {
        const res = await call(servers[i % 3]!.url, '/v1/pets', key, {
          method: 'POST', body: `{"name":"pet ${i}","categoryId":${9007199254740993n + BigInt(i)},"status":"${i % 2 === 0 ? 'available' : 'pending'}"}`
        })
        assert.equal(res.status, 201, JSON.stringify(res.body))
        return res.body as PetBody
      }))
      const ids = made.map(p => p.id).sort((a, b) => a - b)
      assert.equal(new Set(ids).size, 90)

      // Every pet, through each instance; walks that hop between instances see each pet once, in order.
      for (const s of servers) {
        for (const p of made) {
          const got = await call(s.url, `/v1/pets/${p.id}`, key)
          assert.equal(got.status, 200)
          assert.deepEqual(got.body, p)
        }
      }
      assert.deepEqual(await walk(servers, key, '/v1/pets?limit=7'), ids)
      assert.deepEqual(await walk(servers.slice(1), key, '/v1/pets?limit=4&status=pending'), made.filter(p => p.status === 'pending').map(p => p.id).sort((a, b) => a - b))

      // A revocation made through the CLI is refused by every instance within 1 second, even by
      // those that had just verified (and cached) the key.
      for (const s of servers) assert.equal((await call(s.url, '/v1/pets?limit=1', key)).status, 200)
      const revoked = await runCli(['keys', 'revoke', keyId], env)
      assert.equal(revoked.code, 0, revoked.stderr)
      await new Promise(resolve => setTimeout(resolve, 1000))
      for (const s of servers) {
        const res = await call(s.url, '/v1/pets?limit=1', key)
        assert.equal(res.status, 401)
        assert.equal((res.body as { code: string }).code, 'unauthorized')
      }
    })
  })
}
