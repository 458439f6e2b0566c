import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.js'
import { createApiKey } from '../../src/services/api-keys.js'

/*
 * The failed-attempt limit of an address must not lock out the innocent clients
 * that share it (NAT, a proxy), and must still cost a blocked guesser no store lookup.
 */
const guess = (i: number) => ({ authorization: 'Bearer psk_' + String(i).padStart(43, 'g') })

describe('failed-attempt limit per address', () => {
  it('a key already known valid passes its blocked address; an unknown one is refused without a store lookup', async (t) => {
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_ANON_MAX: '3' } })
    const shared = '203.0.113.7'
    // An innocent client behind the shared address, known from an earlier request.
    assert.equal((await ta.app.inject({ url: '/v1/pets', headers: ta.auth, remoteAddress: shared })).statusCode, 200)
    const codes: number[] = []
    for (let i = 0; i < 5; i++) codes.push((await ta.app.inject({ url: '/v1/pets', headers: guess(i), remoteAddress: shared })).statusCode)
    assert.deepEqual(codes, [401, 401, 401, 429, 429])

    const innocent = await ta.app.inject({ url: '/v1/pets', headers: ta.auth, remoteAddress: shared })
    assert.equal(innocent.statusCode, 200, innocent.body)
    const created = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth, payload: { name: 'Rex', categoryId: 1 }, remoteAddress: shared })
    assert.equal(created.statusCode, 201)

    // Guesses and keys never seen from anywhere are still refused, and none reaches the store.
    const { key: fresh } = await createApiKey(ta.store, 'fresh')
    let lookups = 0
    const find = ta.store.findApiKeyByHash.bind(ta.store)
    ta.store.findApiKeyByHash = async (hash) => { lookups++; return await find(hash) }
    for (const headers of [guess(99), { authorization: `Bearer ${fresh}` }, {}]) {
      const res = await ta.app.inject({ url: '/v1/pets', headers, remoteAddress: shared })
      assert.equal(res.statusCode, 429)
      assert.equal(res.json().code, 'rate_limited')
    }
    assert.equal(lookups, 0)
  })

  it('behind a proxy that appends to X-Forwarded-For (TRUST_PROXY=loopback), the client cannot choose its address', async (t) => {
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_ANON_MAX: '2', TRUST_PROXY: 'loopback' } })
    // The client sends its own X-Forwarded-For; the proxy on loopback appends the address it saw.
    const via = (claimed: string, seen: string) => ({ 'x-forwarded-for': `${claimed}, ${seen}` })
    const codes: number[] = []
    for (let i = 0; i < 4; i++) {
      codes.push((await ta.app.inject({ url: '/v1/pets', headers: { ...guess(i), ...via(`198.51.100.${i}`, '203.0.113.9') }, remoteAddress: '127.0.0.1' })).statusCode)
    }
    // Rotating the claimed address does not help: the limit counts the address the proxy saw.
    assert.deepEqual(codes, [401, 401, 429, 429])
    // Another client behind the same proxy is untouched.
    const other = await ta.app.inject({ url: '/v1/pets', headers: { ...guess(7), ...via('203.0.113.9', '192.0.2.50') }, remoteAddress: '127.0.0.1' })
    assert.equal(other.statusCode, 401)
  })

  it('with TRUST_PROXY=loopback, a client that connects directly over loopback chooses its own address (docs/reference/behaviour.md: bind where only the proxy reaches)', async (t) => {
    const ta = await buildTestApp(t, { env: { RATE_LIMIT_ANON_MAX: '2', TRUST_PROXY: 'loopback' } })
    // No proxy appends anything: the client's own X-Forwarded-For is believed, so rotating it dodges the limit.
    const codes: number[] = []
    for (let i = 0; i < 4; i++) {
      codes.push((await ta.app.inject({ url: '/v1/pets', headers: { ...guess(i), 'x-forwarded-for': `198.51.100.${i}` }, remoteAddress: '127.0.0.1' })).statusCode)
    }
    assert.deepEqual(codes, [401, 401, 401, 401])
    // The same client from an address not trusted: its header is ignored and the limit holds.
    const direct: number[] = []
    for (let i = 0; i < 4; i++) {
      direct.push((await ta.app.inject({ url: '/v1/pets', headers: { ...guess(i), 'x-forwarded-for': `198.51.100.${i}` }, remoteAddress: '192.0.2.77' })).statusCode)
    }
    assert.deepEqual(direct, [401, 401, 429, 429])
  })
})
