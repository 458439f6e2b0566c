import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { SqliteStore } from '../../src/store/sqlite/index.js'
import { tempDir } from '../helpers/app.js'

async function openTemp (t: Parameters<typeof tempDir>[0]): Promise<SqliteStore> {
  const store = await SqliteStore.open({ path: join(tempDir(t), 'p.db'), synchronous: 'FULL' })
  t.after(() => store.close())
  return store
}

const ids = (pets: Array<{ id: bigint }>) => pets.map(p => Number(p.id))

describe('SqliteStore.listPets page cache', () => {
  it('never serves a stale end of the walk: a page with fewer pets than asked grows as pets are added', async (t) => {
    const store = await openTemp(t)
    for (let i = 0; i < 3; i++) await store.createPet({ name: `p${i}`, categoryId: BigInt(i), status: 'sold' })
    assert.deepEqual(ids(await store.listPets({ afterId: null, limit: 5, status: undefined })), [1, 2, 3])
    assert.deepEqual(ids(await store.listPets({ afterId: 1n, limit: 5, status: 'sold' })), [2, 3])
    await store.createPet({ name: 'p3', categoryId: 3n, status: 'sold' })
    await store.createPet({ name: 'p4', categoryId: 4n, status: 'available' })
    assert.deepEqual(ids(await store.listPets({ afterId: null, limit: 5, status: undefined })), [1, 2, 3, 4, 5])
    assert.deepEqual(ids(await store.listPets({ afterId: 1n, limit: 5, status: 'sold' })), [2, 3, 4])
  })

  it('answers a full page the same every time, and the caller may truncate its copy', async (t) => {
    const store = await openTemp(t)
    for (let i = 0; i < 4; i++) await store.createPet({ name: `p${i}`, categoryId: BigInt(i), status: 'available' })
    const first = await store.listPets({ afterId: null, limit: 3, status: undefined })
    first.length = 1
    await store.createPet({ name: 'late', categoryId: 9n, status: 'available' })
    const again = await store.listPets({ afterId: null, limit: 3, status: undefined })
    assert.deepEqual(ids(again), [1, 2, 3])
    assert.deepEqual(again.map(p => p.name), ['p0', 'p1', 'p2'])
  })

  it('keys pages by status filter and limit', async (t) => {
    const store = await openTemp(t)
    for (const status of ['sold', 'available', 'sold', 'available'] as const) await store.createPet({ name: status, categoryId: 1n, status })
    assert.deepEqual(ids(await store.listPets({ afterId: null, limit: 2, status: undefined })), [1, 2])
    assert.deepEqual(ids(await store.listPets({ afterId: null, limit: 2, status: 'sold' })), [1, 3])
    assert.deepEqual(ids(await store.listPets({ afterId: null, limit: 2, status: 'available' })), [2, 4])
    assert.deepEqual(ids(await store.listPets({ afterId: null, limit: 1, status: undefined })), [1])
  })
})

describe('SqliteStore.getPet cache', () => {
  it('finds a pet created after a lookup missed it', async (t) => {
    const store = await openTemp(t)
    assert.equal(await store.getPet(1n), undefined)
    await store.createPet({ name: 'late', categoryId: 5n, status: 'pending' })
    assert.deepEqual(await store.getPet(1n), { id: 1n, name: 'late', categoryId: 5n, status: 'pending' })
    assert.deepEqual(await store.getPet(1n), { id: 1n, name: 'late', categoryId: 5n, status: 'pending' })
  })
})
