import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  createClient, ERROR_CODES, isKnownErrorCode, PET_STATUSES, PetstoreError, PetstoreInsufficientScopeError, PetstoreKeyExpiredError, type DeprecationNotice
} from '../../packages/client/src/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { checkingFetch, startTestServer } from '../helpers/server.js'
import { onCleanup } from '../helpers/cleanup.js'

const INT64_MAX = 2n ** 63n - 1n

// The client against the real server over HTTP; every response is also checked against the document.
describe('@petstore/client', () => {
  it('creates and gets an animal with an exact int64 categoryId', async (t) => {
    const s = await startTestServer(t)
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: checkingFetch, onDeprecation: () => {} })
    const created = await client.createPet({ name: 'Rex', categoryId: INT64_MAX, status: 'pending' })
    assert.equal(typeof created.id, 'bigint')
    assert.deepEqual(created, { id: created.id, name: 'Rex', categoryId: INT64_MAX, status: 'pending' })
    assert.deepEqual(await client.getPet(created.id), created)
    const small = await client.createPet({ name: 'Tom', categoryId: 7 })
    assert.equal(small.categoryId, 7n)
    assert.equal(small.status, 'available')
  })

  it('refuses a number categoryId that has already lost digits', async (t) => {
    const s = await startTestServer(t)
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key })
    await assert.rejects(client.createPet({ name: 'Rex', categoryId: 2 ** 60 }), RangeError)
  })

  it('walks every animal through Link rel="next" with the async iterator, filter kept', async (t) => {
    const s = await startTestServer(t)
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: checkingFetch })
    const sold: bigint[] = []
    for (let i = 0; i < 8; i++) {
      const pet = await client.createPet({ name: `p${i}`, categoryId: i, status: i % 2 === 0 ? 'sold' : 'available' })
      if (pet.status === 'sold') sold.push(pet.id)
    }
    const all: bigint[] = []
    for await (const pet of client.pets({ pageSize: 3 })) all.push(pet.id)
    assert.equal(all.length, 8)
    assert.deepEqual([...all].sort((a, b) => (a < b ? -1 : 1)), all)
    const onlySold: bigint[] = []
    for await (const pet of client.pets({ status: 'sold', pageSize: 1 })) onlySold.push(pet.id)
    assert.deepEqual(onlySold, sold)

    const first = await client.listPets({ limit: 5 })
    assert.equal(first.pets.length, 5)
    assert.ok(first.nextCursor !== undefined && first.next?.startsWith(`${s.baseUrl}/pets?`))
    const second = await client.listPets({ limit: 5, cursor: first.nextCursor })
    assert.deepEqual([...first.pets, ...second.pets].map(p => p.id), all)
    assert.equal(second.next, undefined)
  })

  it('fails with a typed PetstoreError carrying the Error object', async (t) => {
    const s = await startTestServer(t)
    const bad = createClient({ baseUrl: s.baseUrl, apiKey: 'psk_not-a-key', fetch: checkingFetch })
    const err = await bad.listPets().catch((e: unknown) => e)
    assert.ok(err instanceof PetstoreError)
    assert.equal(err.code, 'unauthorized')
    assert.equal(err.status, 401)
    assert.deepEqual(err.body, { code: 'unauthorized', message: 'the API key is invalid or revoked', status: 401 })
    assert.ok(err.requestId !== undefined && err.requestId.length > 0)

    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: checkingFetch, onDeprecation: () => {} })
    await assert.rejects(client.getPet(424242n), (e: unknown) => e instanceof PetstoreError && e.code === 'not_found' && e.status === 404)
    await assert.rejects(client.createPet({ name: '   ', categoryId: 1 }), (e: unknown) => e instanceof PetstoreError && e.code === 'validation_failed' && /blank/.test(e.message))
    await assert.rejects(client.createPet({ name: '   ', categoryId: 1, status: 'lost' as 'sold' }), (e: unknown) => e instanceof PetstoreError && e.body.details?.map(d => d.field).sort().join() === 'name,status')
    await assert.rejects(client.listPets({ limit: 500 }), (e: unknown) => e instanceof PetstoreError && e.code === 'invalid_parameter')
  })

  it('fails with PetstoreInsufficientScopeError naming the scope, and PetstoreKeyExpiredError once the key expired', async (t) => {
    const s = await startTestServer(t)
    const reader = createClient({ baseUrl: s.baseUrl, apiKey: (await createApiKey(s.store, 'reader', { scopes: ['pets:read'] })).key, fetch: checkingFetch })
    assert.deepEqual((await reader.listPets()).pets, [])
    const denied = await reader.createPet({ name: 'Rex', categoryId: 1 }).catch((e: unknown) => e)
    assert.ok(denied instanceof PetstoreInsufficientScopeError, String(denied))
    assert.ok(denied instanceof PetstoreError)
    assert.deepEqual([denied.name, denied.code, denied.status, denied.scope], ['PetstoreInsufficientScopeError', 'insufficient_scope', 403, 'pets:write'])
    assert.ok(denied.requestId !== undefined)

    const expiresAt = new Date(Date.now() + 1500)
    const brief = createClient({ baseUrl: s.baseUrl, apiKey: (await createApiKey(s.store, 'brief', { expiresAt })).key, fetch: checkingFetch })
    assert.deepEqual((await brief.listPets()).pets, [])
    await sleep(expiresAt.getTime() - Date.now() + 50)
    const expired = await brief.listPets().catch((e: unknown) => e)
    assert.ok(expired instanceof PetstoreKeyExpiredError, String(expired))
    assert.deepEqual([expired.name, expired.code, expired.status, expired.message], ['PetstoreKeyExpiredError', 'key_expired', 401, '401 key_expired: the API key has expired'])
  })

  it('reports a Deprecation header once per operation through the hook', async (t) => {
    const s = await startTestServer(t)
    const notices: DeprecationNotice[] = []
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: checkingFetch, onDeprecation: n => notices.push(n) })
    const pet = await client.createPet({ name: 'Rex', categoryId: 1 })
    await client.listPets()
    assert.equal(notices.length, 0)
    await client.getPet(pet.id)
    await client.getPet(pet.id).catch(() => {})
    assert.equal(notices.length, 1)
    assert.equal(notices[0]!.operationId, 'getPet')
    assert.match(notices[0]!.deprecation, /^@\d+$/)
    assert.equal(notices[0]!.sunset?.toISOString(), '2030-12-05T00:00:00.000Z')
    assert.equal(notices[0]!.successor, `${s.baseUrl}/pets`)
  })

  it('warns through process warnings by default', async (t) => {
    const s = await startTestServer(t)
    const warnings: Error[] = []
    const listener = (w: Error): void => { warnings.push(w) }
    process.on('warning', listener)
    onCleanup(t, () => process.off('warning', listener))
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key })
    await client.getPet(1n).catch(() => {})
    await new Promise(resolve => setImmediate(resolve))
    const ours = warnings.filter(w => (w as { code?: string }).code === 'PETSTORE_DEPRECATED')
    assert.equal(ours.length, 1)
    assert.match(ours[0]!.message, /getPet is deprecated and stops working on Thu, 05 Dec 2030/)
  })

  it('passes an error code it does not know through as it came, with its status and body', async (t) => {
    // A service version newer than the client answers a code added after the client was built.
    const body = { code: 'quota_exhausted', message: 'the monthly quota of this key is used up', status: 403 }
    const server = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json', 'x-request-id': 'req-1' }).end(JSON.stringify(body))
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    onCleanup(t, () => { server.close() })
    const client = createClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, apiKey: 'psk_x' })
    const err = await client.listPets().catch((e: unknown) => e)
    assert.ok(err instanceof PetstoreError, String(err))
    const code: string = err.code
    assert.deepEqual([code, err.status, err.body, err.requestId], ['quota_exhausted', 403, body, 'req-1'])
    assert.equal(isKnownErrorCode(err.code), false)
    assert.equal(isKnownErrorCode('not_found'), true)
    assert.equal(isKnownErrorCode('unexpected_response'), true)
  })

  it('knows the same error codes, statuses and operations as the document', () => {
    const doc = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'))
    assert.deepEqual([...ERROR_CODES], doc.components.schemas.Error.properties.code.anyOf[0].enum)
    assert.deepEqual([...PET_STATUSES], doc.components.schemas.Pet.properties.status.enum)
    const client = createClient({ baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'k' }) as unknown as Record<string, unknown>
    for (const id of ['listPets', 'createPet', 'getPet']) {
      assert.ok(JSON.stringify(doc.paths).includes(`"operationId":"${id}"`))
      assert.equal(typeof client[id], 'function')
    }
  })
})
