import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { STORE_OPENING_MESSAGE } from '../../src/errors.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { SqliteStore } from '../../src/store/sqlite/index.js'
import { STORES, assertError, buildTestApp, checkEveryResponse, tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

for (const store of STORES) {
  describe(`GET /healthz and GET /readyz [${store}]`, () => {
    it('answer 200 without a key while the store answers', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const url of ['/healthz', '/readyz']) {
        const res = await ta.app.inject({ url })
        assert.equal(res.statusCode, 200)
        assert.deepEqual(res.json(), { status: 'ok' })
      }
    })

    it('/readyz answers 503 when the store is closed, while /healthz stays 200', async (t) => {
      const ta = await buildTestApp(t, { store })
      await ta.store.close()
      const res = await ta.app.inject({ url: '/readyz' })
      assertError(res, 503, 'service_unavailable', 'the store does not answer')
      assert.equal(res.headers['retry-after'], '1')
      assert.equal((await ta.app.inject({ url: '/healthz' })).statusCode, 200)
    })
  })
}

describe('GET /healthz and GET /readyz while a start checks its SQLite store', () => {
  it('/healthz 200; /readyz and every request under /v1 (unknown paths too, before authentication) 503 with Retry-After; then 200', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'petstore.db')
    const made = await SqliteStore.open({ path, synchronous: 'FULL' })
    const { key } = await createApiKey(made, 'test')
    await made.close()
    // Exclusive locking mode: the check cannot read the file until this connection closes.
    const holder = new Database(path)
    holder.pragma('locking_mode = EXCLUSIVE')
    holder.exec('BEGIN EXCLUSIVE')
    holder.exec('COMMIT')
    onCleanup(t, () => { if (holder.open) holder.close() })
    const config = loadConfig({ DATABASE_URL: `sqlite:${path}`, EVENT_LOOP_MAX_DELAY_MS: '0' }, dir)
    const store = await SqliteStore.start({ path, synchronous: 'FULL' })
    const app = await buildApp({ config, store })
    onCleanup(t, () => app.close())
    checkEveryResponse(app)
    await app.ready()

    const health = await app.inject({ url: '/healthz' })
    assert.deepEqual([health.statusCode, health.json()], [200, { status: 'ok' }])
    const auth = { authorization: `Bearer ${key}` }
    for (const req of [
      { url: '/readyz' },
      { url: '/v1/pets', headers: auth },
      { url: '/v1/pets' },
      { url: '/v1/pets/1', headers: auth },
      { url: '/v1?x=1' },
      { url: '/v1/no-such-path', headers: auth },
      { method: 'POST' as const, url: '/v1/pets', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"name":"Rex","categoryId":1}' }
    ]) {
      const res = await app.inject(req)
      assertError(res, 503, 'service_unavailable', STORE_OPENING_MESSAGE)
      assert.equal(res.headers['retry-after'], '1', `${req.method ?? 'GET'} ${req.url}`)
    }
    assert.equal((await app.inject({ url: '/v10' })).statusCode, 404, 'only /v1 waits for the store')
    assert.equal((await app.inject({ url: '/openapi.json' })).statusCode, 200)

    holder.close()
    await app.storeOpened()
    assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
    const pets = await app.inject({ url: '/v1/pets', headers: auth })
    assert.deepEqual([pets.statusCode, pets.json()], [200, []], 'the create refused while starting wrote nothing')
  })
})
