import { describe, it } from 'node:test'
import { assertError, buildTestApp } from '../helpers/app.js'

describe('GET /v1/store/orders', () => {
  it('answers 501 not_implemented after authentication, 401 before it', async (t) => {
    const ta = await buildTestApp(t)
    assertError(await ta.app.inject({ url: '/v1/store/orders', headers: ta.auth }), 501, 'not_implemented',
      'GET /v1/store/orders is named by the Petstore v1 interface but not specified; it is not implemented')
    assertError(await ta.app.inject({ url: '/v1/store/orders' }), 401, 'unauthorized', 'missing bearer API key: send Authorization: Bearer <API_KEY>')
  })
})
