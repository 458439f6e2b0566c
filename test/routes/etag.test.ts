import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, createPet } from '../helpers/app.js'

describe('conditional reads', () => {
  it('getPet carries a strong ETag; If-None-Match with it answers 304 with no body', async (t) => {
    const ta = await buildTestApp(t)
    const pet = await createPet(ta, { name: 'Rex', categoryId: 7 })
    const res = await ta.app.inject({ url: `/v1/pets/${pet.id}`, headers: ta.auth })
    assert.equal(res.statusCode, 200)
    const etag = String(res.headers.etag)
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/) // strong: no W/
    assert.equal(res.headers['cache-control'], 'private, no-cache')

    const again = await ta.app.inject({ url: `/v1/pets/${pet.id}`, headers: { ...ta.auth, 'if-none-match': etag } })
    assert.equal(again.statusCode, 304)
    assert.equal(again.body, '')
    assert.equal(again.headers.etag, etag)
    assert.equal(again.headers['content-type'], undefined)
    assert.ok(again.headers.deprecation !== undefined, 'getPet keeps its deprecation headers on 304')

    for (const inm of [`W/${etag}`, `"other", ${etag}`, '*']) {
      assert.equal((await ta.app.inject({ url: `/v1/pets/${pet.id}`, headers: { ...ta.auth, 'if-none-match': inm } })).statusCode, 304, inm)
    }
    const miss = await ta.app.inject({ url: `/v1/pets/${pet.id}`, headers: { ...ta.auth, 'if-none-match': '"nope"' } })
    assert.equal(miss.statusCode, 200)
    assert.deepEqual(miss.json(), pet)
  })

  it('list pages carry an ETag that changes when the page changes', async (t) => {
    const ta = await buildTestApp(t)
    await createPet(ta, { name: 'A', categoryId: 1 })
    const first = await ta.app.inject({ url: '/v1/pets?limit=5', headers: ta.auth })
    const etag = String(first.headers.etag)
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/)
    const same = await ta.app.inject({ url: '/v1/pets?limit=5', headers: { ...ta.auth, 'if-none-match': etag } })
    assert.equal(same.statusCode, 304)
    assert.equal(same.body, '')

    await createPet(ta, { name: 'B', categoryId: 2 })
    const changed = await ta.app.inject({ url: '/v1/pets?limit=5', headers: { ...ta.auth, 'if-none-match': etag } })
    assert.equal(changed.statusCode, 200)
    assert.equal(changed.json().length, 2)
    assert.notEqual(changed.headers.etag, etag)
  })

  it('errors carry no ETag and stay no-store', async (t) => {
    const ta = await buildTestApp(t)
    const res = await ta.app.inject({ url: '/v1/pets/999', headers: ta.auth })
    assert.equal(res.statusCode, 404)
    assert.equal(res.headers.etag, undefined)
    assert.equal(res.headers['cache-control'], 'no-store')
  })
})
