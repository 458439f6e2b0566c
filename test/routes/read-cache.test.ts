import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildMetricsApp } from '../../src/observability/metrics.js'
import { buildTestApp, createPet, deletePetInDb, STORES, type TestApp } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

const get = async (ta: TestApp, url: string, headers: Record<string, string> = {}) => await ta.app.inject({ url, headers: { ...ta.auth, ...headers } })
const ids = (body: string) => (JSON.parse(body) as Array<{ id: number }>).map(p => p.id)

for (const store of STORES) {
  describe(`read cache [${store}]`, () => {
    it('answers a full page and a pet again with the same bytes, ETag and Link, without asking the store', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (let i = 0; i < 3; i++) await createPet(ta, { name: `p${i}`, categoryId: i })
      const page = await get(ta, '/v1/pets?limit=2')
      const pet = await get(ta, '/v1/pets/1')
      assert.equal(page.statusCode, 200)
      assert.match(String(page.headers.link), /rel="next"$/)
      // Behind the service's back (the API cannot delete): a hit does not read the store.
      await deletePetInDb(ta, 1)
      const again = await get(ta, '/v1/pets?limit=2')
      const petAgain = await get(ta, '/v1/pets/1')
      for (const [a, b] of [[page, again], [pet, petAgain]] as const) {
        assert.equal(b.statusCode, 200)
        assert.equal(b.body, a.body)
        assert.equal(b.headers.etag, a.headers.etag)
        assert.equal(b.headers.link, a.headers.link)
        assert.equal(b.headers['content-type'], 'application/json; charset=utf-8')
        assert.equal(b.headers['content-length'], String(Buffer.byteLength(a.body)))
        assert.equal(b.headers['cache-control'], 'private, no-cache')
      }
      assert.ok(petAgain.headers.deprecation !== undefined && petAgain.headers.sunset !== undefined, 'getPet keeps its deprecation headers on a hit')
      assert.equal(petAgain.headers.link, '</v1/pets>; rel="successor-version"')
      // A hit still revalidates, and a pet not cached is read from the store.
      const cond = await get(ta, '/v1/pets?limit=2', { 'if-none-match': String(page.headers.etag) })
      assert.equal(cond.statusCode, 304)
      assert.equal(cond.body, '')
      assert.equal((await get(ta, '/v1/pets/2')).statusCode, 200)
      assert.equal((await get(ta, '/v1/pets?limit=5')).body.includes('"p0"'), false)

      const metrics = buildMetricsApp(ta.metrics)
      onCleanup(t, () => metrics.close())
      const text = (await metrics.inject({ url: '/metrics' })).body
      assert.match(text, /petstore_read_cache_hits_total\{kind="page"\} 2/)
      assert.match(text, /petstore_read_cache_hits_total\{kind="pet"\} 1/)
      assert.match(text, /petstore_read_cache_misses_total\{kind="pet"\} 2/)
      assert.match(text, /petstore_read_cache_entries 3/)
      assert.match(text, /petstore_read_cache_bytes \d{4}/)
    })

    it('serves another instance\'s new pets at once: the newest page and unknown ids are never cached', async (t) => {
      const a = await buildTestApp(t, { store })
      const b = await buildTestApp(t, { sameDatabaseAs: a })
      await createPet(a, { name: 'one', categoryId: 1, status: 'sold' })
      await createPet(a, { name: 'two', categoryId: 2 })
      const full = await get(a, '/v1/pets?limit=1')
      assert.deepEqual(ids((await get(a, '/v1/pets?limit=5')).body), [1, 2])
      assert.deepEqual(ids((await get(a, '/v1/pets?limit=5&status=sold')).body), [1])
      assert.equal((await get(a, '/v1/pets/3')).statusCode, 404)

      await createPet(b, { name: 'three', categoryId: 3, status: 'sold' })
      assert.deepEqual(ids((await get(a, '/v1/pets?limit=5')).body), [1, 2, 3])
      assert.deepEqual(ids((await get(a, '/v1/pets?limit=5&status=sold')).body), [1, 3])
      assert.equal((await get(a, '/v1/pets/3')).statusCode, 200)
      const fullAgain = await get(a, '/v1/pets?limit=1')
      assert.equal(fullAgain.body, full.body)
      assert.equal(fullAgain.headers.link, full.headers.link)
      // The cached page's next link still walks on, on either instance.
      const next = /^<([^>]+)>; rel="next"$/.exec(String(full.headers.link))![1]!
      assert.deepEqual(ids((await get(b, next)).body), [2])
    })

    it('still refuses a revoked key on a cached read', async (t) => {
      const ta = await buildTestApp(t, { store, env: { KEY_CACHE_TTL_MS: '0' } })
      await createPet(ta, { name: 'a', categoryId: 1 })
      await createPet(ta, { name: 'b', categoryId: 2 })
      assert.equal((await get(ta, '/v1/pets?limit=1')).statusCode, 200)
      assert.equal((await get(ta, '/v1/pets/1')).statusCode, 200)
      const [key] = await ta.store.listApiKeys()
      await ta.store.revokeApiKey(key!.id, new Date())
      assert.equal((await get(ta, '/v1/pets?limit=1')).statusCode, 401)
      assert.equal((await get(ta, '/v1/pets/1')).statusCode, 401)
    })
  })
}
