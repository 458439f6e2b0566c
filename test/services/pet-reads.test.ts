import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import type { Page } from '../../src/services/pet-reads.js'
import { readPage } from '../../src/services/pet-reads.js'
import { openStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import { STORES, testDatabaseUrl, type StoreKind } from '../helpers/app.js'

async function open (t: TestContext, kind: StoreKind): Promise<Store> {
  return await openStore(loadConfig({ DATABASE_URL: await testDatabaseUrl(t, kind, undefined) }))
}

const shape = (page: Page) => ({ ids: page.pets.map(p => Number(p.id)), last: page.last === undefined ? undefined : Number(page.last.id), final: page.final })

for (const kind of STORES) {
  describe(`readPage [${kind}]`, () => {
    it('tells a full page (more follow: its last pet, final) from a partial one (the end of a walk, never final), by filter, cursor and limit', async (t) => {
      const store = await open(t, kind)
      try {
        for (let i = 0; i < 3; i++) await store.createPet({ name: `p${i}`, categoryId: BigInt(i), status: i === 1 ? 'sold' : 'available' })
        assert.deepEqual(shape(await readPage(store, { afterId: null, limit: 2, status: undefined })), { ids: [1, 2], last: 2, final: true })
        // Exactly two left for a page of two: nothing follows yet, so the page may still grow.
        assert.deepEqual(shape(await readPage(store, { afterId: 1n, limit: 2, status: undefined })), { ids: [2, 3], last: undefined, final: false })
        assert.deepEqual(shape(await readPage(store, { afterId: null, limit: 1, status: 'sold' })), { ids: [2], last: undefined, final: false })

        await store.createPet({ name: 'p3', categoryId: 3n, status: 'sold' })
        assert.deepEqual(shape(await readPage(store, { afterId: 1n, limit: 2, status: undefined })), { ids: [2, 3], last: 3, final: true })
        assert.deepEqual(shape(await readPage(store, { afterId: null, limit: 1, status: 'sold' })), { ids: [2], last: 2, final: true })
        assert.deepEqual(shape(await readPage(store, { afterId: null, limit: 1, status: 'available' })), { ids: [1], last: 1, final: true })
        assert.deepEqual(shape(await readPage(store, { afterId: 2n, limit: 1, status: 'sold' })), { ids: [4], last: undefined, final: false })
      } finally {
        await store.close()
      }
    })
  })
}
