import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.js'

describe('GET /', () => {
  it('answers 200 without a key with links to the docs page, the document, the API and health, each of which answers', async (t) => {
    const ta = await buildTestApp(t, { store: 'sqlite' })
    const res = await ta.app.inject({ url: '/' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    const body = res.json() as { name: string, links: Record<string, string> }
    assert.deepEqual(body, { name: 'Petstore', links: { docs: '/docs', openapi: '/openapi.json', api: '/v1', health: '/healthz' } })
    for (const url of ['/docs', '/openapi.json', '/healthz']) {
      assert.ok([200, 302].includes((await ta.app.inject({ url })).statusCode), url)
    }
    assert.equal((await ta.app.inject({ url: '/v1/pets' })).statusCode, 401, '/v1 is the API, behind a key')
  })

  it('is described by the OpenAPI document', async (t) => {
    const ta = await buildTestApp(t, { store: 'sqlite' })
    const doc = (await ta.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, { get?: { operationId?: string } }> }
    assert.equal(doc.paths['/']?.get?.operationId, 'index')
  })
})
