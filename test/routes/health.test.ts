import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { STORES, assertError, buildTestApp } from '../helpers/app.js'

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
