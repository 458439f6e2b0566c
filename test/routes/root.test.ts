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
    assert.deepEqual(body, { name: 'Petstore', links: { docs: '/docs', openapi: '/openapi.json', api: '/v1', health: '/healthz', ready: '/readyz' } })
    assert.equal(res.headers.vary, 'Accept')
    for (const url of ['/docs', '/openapi.json', '/healthz', '/readyz']) {
      assert.ok([200, 302].includes((await ta.app.inject({ url })).statusCode), url)
    }
    assert.equal((await ta.app.inject({ url: '/v1/pets' })).statusCode, 401, '/v1 is the API, behind a key')
  })

  it('gives a browser (Accept ranking text/html first) an HTML page linking the docs page, the document, health and readiness', async (t) => {
    const ta = await buildTestApp(t, { store: 'sqlite' })
    const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'
    const res = await ta.app.inject({ url: '/', headers: { accept: browser } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers.vary, 'Accept')
    const hrefs = [...res.body.matchAll(/href="([^"]+)"/g)].map(m => m[1])
    for (const link of ['/docs', '/openapi.json', '/healthz', '/readyz']) assert.ok(hrefs.includes(link), `${link} in ${hrefs.join(' ')}`)
    assert.match(res.body, /^<!doctype html>/)
  })

  it('answers JSON to every Accept that does not prefer HTML', async (t) => {
    const ta = await buildTestApp(t, { store: 'sqlite' })
    for (const accept of ['*/*', 'application/json', 'application/json, text/html', 'text/html;q=0.5, application/json', 'image/png']) {
      const res = await ta.app.inject({ url: '/', headers: { accept } })
      assert.equal(res.statusCode, 200, accept)
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', accept)
      assert.equal((res.json() as { name: string }).name, 'Petstore', accept)
    }
  })

  it('keeps CORS\'s Origin in Vary, before Accept', async (t) => {
    const ta = await buildTestApp(t, { store: 'sqlite', env: { CORS_ORIGINS: 'https://app.example' } })
    const res = await ta.app.inject({ url: '/', headers: { origin: 'https://app.example', accept: 'text/html' } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers.vary, 'Origin, Accept')
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example')
  })

  it('is described by the OpenAPI document', async (t) => {
    const ta = await buildTestApp(t, { store: 'sqlite' })
    const doc = (await ta.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, { get?: { operationId?: string } }> }
    assert.equal(doc.paths['/']?.get?.operationId, 'index')
  })
})
