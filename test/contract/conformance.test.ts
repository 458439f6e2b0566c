import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, createPet } from '../helpers/app.js'
import { checkResponse, ConformanceError, conformance, type SeenResponse } from '../helpers/conformance.js'

// Every inject below goes through the helper, which checks the response against openapi/openapi.json;
// these tests reach each documented status of each operation so that check covers all of them.
describe('responses conform to the committed OpenAPI document', () => {
  it('createPet: 201, 400 (three codes), 401, 413, 415', async (t) => {
    const ta = await buildTestApp(t, { env: { BODY_LIMIT: '256' } })
    const json = { ...ta.auth, 'content-type': 'application/json' }
    const post = async (headers: Record<string, string>, payload: string) => await ta.app.inject({ method: 'POST', url: '/v1/pets', headers, payload })
    assert.equal((await post(json, '{"name":"Rex","categoryId":9223372036854775807}')).statusCode, 201)
    assert.equal((await post(json, '{"name":"Rex"}')).json().code, 'validation_failed')
    assert.equal((await post(json, '{"name":')).json().code, 'invalid_json')
    assert.equal((await post({ 'content-type': 'application/json' }, '{}')).statusCode, 401)
    assert.equal((await post({ ...json, authorization: 'Bearer psk_nope' }, '{}')).statusCode, 401)
    assert.equal((await post(json, JSON.stringify({ name: 'x'.repeat(300), categoryId: 1 }))).statusCode, 413)
    assert.equal((await post({ ...ta.auth, 'content-type': 'text/plain' }, 'Rex')).statusCode, 415)
  })

  it('listPets: 200 with and without Link, 400, 401', async (t) => {
    const ta = await buildTestApp(t)
    for (let i = 0; i < 3; i++) await createPet(ta, { name: `p${i}`, categoryId: i, status: 'sold' })
    const first = await ta.app.inject({ url: '/v1/pets?limit=2&status=sold', headers: ta.auth })
    assert.match(String(first.headers.link), /rel="next"/)
    const next = /^<([^>]+)>/.exec(String(first.headers.link))![1]!
    const last = await ta.app.inject({ url: next, headers: ta.auth })
    assert.equal(last.headers.link, undefined)
    assert.equal((await ta.app.inject({ url: '/v1/pets?limit=0', headers: ta.auth })).statusCode, 400)
    assert.equal((await ta.app.inject({ url: '/v1/pets' })).statusCode, 401)
  })

  it('getPet: 200, 400, 401, 404 with the deprecation headers', async (t) => {
    const ta = await buildTestApp(t)
    const pet = await createPet(ta, { name: 'Rex', categoryId: 1 })
    assert.equal((await ta.app.inject({ url: `/v1/pets/${pet.id}`, headers: ta.auth })).statusCode, 200)
    assert.equal((await ta.app.inject({ url: '/v1/pets/abc', headers: ta.auth })).statusCode, 400)
    assert.equal((await ta.app.inject({ url: `/v1/pets/${pet.id}` })).statusCode, 401)
    assert.equal((await ta.app.inject({ url: '/v1/pets/999', headers: ta.auth })).statusCode, 404)
  })

  it('getPet: 410 after the sunset', async (t) => {
    const ta = await buildTestApp(t, { now: () => Date.parse('2031-01-01T00:00:00Z') })
    assert.equal((await ta.app.inject({ url: '/v1/pets/1', headers: ta.auth })).statusCode, 410)
  })

  it('listOrders 501, health 200, and errors of undocumented routes (404, 405)', async (t) => {
    const ta = await buildTestApp(t)
    assert.equal((await ta.app.inject({ url: '/v1/store/orders', headers: ta.auth })).statusCode, 501)
    assert.equal((await ta.app.inject({ url: '/healthz' })).statusCode, 200)
    assert.equal((await ta.app.inject({ url: '/readyz' })).statusCode, 200)
    assert.equal((await ta.app.inject({ url: '/v1/nowhere', headers: ta.auth })).statusCode, 404)
    assert.equal((await ta.app.inject({ method: 'DELETE', url: '/v1/pets', headers: ta.auth })).statusCode, 405)
  })

  it('readiness: 503 with Retry-After when the store is gone', async (t) => {
    const ta = await buildTestApp(t)
    await ta.store.close()
    const res = await ta.app.inject({ url: '/readyz' })
    assert.equal(res.statusCode, 503)
    assert.equal(res.headers['retry-after'], '1')
  })
})

describe('the conformance check', () => {
  const ok: SeenResponse = {
    method: 'GET',
    url: '/v1/pets/1',
    status: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': 'r1',
      deprecation: '@1767225600',
      sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
      link: '</v1/pets>; rel="successor-version"',
      etag: '"abc"',
      'cache-control': 'private, no-cache',
      vary: 'Accept-Encoding'
    },
    body: '{"id":1,"name":"Rex","categoryId":9223372036854775807,"status":"available"}'
  }

  const errorHeaders = { ...ok.headers, etag: undefined }

  it('accepts a response as documented', () => {
    checkResponse(ok)
  })

  const drifts: Array<[string, Partial<SeenResponse>, RegExp]> = [
    ['an undocumented status', { status: 409 }, /status 409 is not documented for getPet/],
    ['a missing required header', { headers: { ...ok.headers, sunset: undefined } }, /required header Sunset is missing/],
    ['a header breaking its schema', { headers: { ...ok.headers, deprecation: 'yes' } }, /header Deprecation/],
    ['an undocumented header', { headers: { ...ok.headers, 'x-extra': '1' } }, /header x-extra is not documented/],
    ['another content type', { headers: { ...ok.headers, 'content-type': 'text/plain' } }, /content type text\/plain is not documented/],
    ['a body with an extra field', { body: '{"id":1,"name":"Rex","categoryId":1,"status":"available","age":3}' }, /must NOT have additional properties/],
    ['a body with a status outside the enum', { body: '{"id":1,"name":"Rex","categoryId":1,"status":"lost"}' }, /status must be equal to one of the allowed values/],
    ['a non-integer id', { body: '{"id":1.5,"name":"Rex","categoryId":1,"status":"sold"}' }, /must be integer/],
    ['an error whose code belongs to another status', { status: 404, body: '{"code":"gone","message":"m","status":404}', headers: errorHeaders }, /error code gone belongs to status 410/],
    ['an error whose status differs from HTTP', { status: 404, body: '{"code":"not_found","message":"m","status":400}', headers: errorHeaders }, /differs from the HTTP status/],
    ['an error code outside the catalogue', { status: 404, body: '{"code":"nope","message":"m","status":404}', headers: errorHeaders }, /error code nope is not in the catalogue/],
    ['an error code that is no code', { status: 404, body: '{"code":"Not Found","message":"m","status":404}', headers: errorHeaders }, /error body/]
  ]
  for (const [what, change, expected] of drifts) {
    it(`refuses ${what}`, () => {
      assert.throws(() => checkResponse({ ...ok, ...change }), (err: unknown) => err instanceof ConformanceError && expected.test(err.message))
    })
  }

  it('checks errors of undocumented routes against the Error schema', () => {
    assert.throws(() => checkResponse({ method: 'GET', url: '/v1/nowhere', status: 404, headers: { 'content-type': 'text/html', 'x-request-id': 'r' }, body: '<h1>' }), ConformanceError)
  })

  it('reads a path starting with // as a path, as the router does, not as a host', () => {
    // GET //. reaches the router as //, no route: a 404 Error, not an answer of the index (/).
    const notFound = { method: 'GET', url: '//.', status: 404, headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r' }, body: '{"code":"not_found","message":"m","status":404}' }
    checkResponse(notFound)
    assert.throws(() => checkResponse({ ...notFound, url: '/' }), /status 404 is not documented for index/)
  })

  it('knows every operation of the document', () => {
    const ids = Object.values(conformance().document.paths as Record<string, Record<string, { operationId: string }>>).flatMap(item => Object.values(item).map(op => op.operationId))
    assert.deepEqual(ids.sort(), ['createPet', 'getPet', 'index', 'listOrders', 'listPets', 'liveness', 'readiness'])
  })
})
