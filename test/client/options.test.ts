import assert from 'node:assert/strict'
import { createServer, type Socket } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { createClient, parseRetryAfter, PetstoreConnectionError, PetstoreError, PetstoreTimeoutError } from '../../packages/client/src/index.js'
import { checkingFetch, freePort, startTestServer } from '../helpers/server.js'
import { onCleanup } from '../helpers/cleanup.js'

/** checkingFetch that also records the status of every answer, in order. */
function recordingFetch (statuses: number[], onAnswer?: (status: number) => void): typeof fetch {
  return async (input, init) => {
    const res = await checkingFetch(input, init)
    statuses.push(res.status)
    onAnswer?.(res.status)
    return res
  }
}

/** A TCP peer that accepts connections and never answers: the client's deadline is all that ends a call. */
async function silentServer (t: TestContext): Promise<string> {
  const sockets = new Set<Socket>()
  const server = createServer(s => { sockets.add(s); s.on('error', () => {}) })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onCleanup(t, () => { for (const s of sockets) s.destroy(); server.close() })
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`
}

describe('@petstore/client options', () => {
  it('refuses a baseUrl it cannot work with (no /v1, not http or https) before sending anything, naming the expected form', () => {
    let sent = 0
    const fetch: typeof globalThis.fetch = async () => { sent++; return new Response('[]') }
    const refused = ['http://127.0.0.1:8080', 'http://127.0.0.1:8080/', 'http://127.0.0.1:8080/v2', 'http://127.0.0.1:8080/v1/pets',
      'http://127.0.0.1:8080/v1x', 'http://127.0.0.1:8080/v1?x=1', 'http://127.0.0.1:8080/v1#top', 'ftp://127.0.0.1/v1', 'file:///v1', '127.0.0.1:8080/v1', '/v1', '', undefined]
    for (const baseUrl of refused) {
      assert.throws(() => createClient({ baseUrl: baseUrl as unknown as string, apiKey: 'psk_x', fetch }), (e: unknown) =>
        e instanceof TypeError && e.message === `baseUrl must be an http(s) URL ending in /v1, like http://127.0.0.1:8080/v1 (got ${String(baseUrl)})`, String(baseUrl))
    }
    assert.equal(sent, 0)
  })

  it('accepts an http(s) baseUrl ending in /v1, with or without a trailing slash, under a path prefix too', async (t) => {
    for (const baseUrl of ['http://127.0.0.1:8080/v1', 'https://api.example.org/v1/', 'http://[::1]:9/api/v1', 'HTTPS://API.EXAMPLE.ORG/v1']) {
      assert.doesNotThrow(() => createClient({ baseUrl, apiKey: 'psk_x' }), baseUrl)
    }
    const s = await startTestServer(t)
    const pets = await createClient({ baseUrl: `${s.baseUrl}/`, apiKey: s.key, fetch: checkingFetch }).listPets()
    assert.deepEqual(pets.pets, [])
  })

  it('refuses a missing, empty or blank apiKey before sending anything', () => {
    let sent = 0
    const fetch: typeof globalThis.fetch = async () => { sent++; return new Response('[]') }
    for (const apiKey of [undefined, '', '  ', 'psk_a b']) {
      assert.throws(() => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: apiKey as unknown as string, fetch }), (e: unknown) => e instanceof TypeError && /apiKey: required/.test(e.message), String(apiKey))
    }
    assert.equal(sent, 0)
  })

  it('createPet with idempotencyKey: a replay answers the first animal and creates nothing', async (t) => {
    const s = await startTestServer(t)
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: checkingFetch })
    const pet = { name: 'Once', categoryId: 2n ** 62n, status: 'pending' as const }
    const first = await client.createPet(pet, { idempotencyKey: 'order-7f3a' })
    const again = await client.createPet(pet, { idempotencyKey: 'order-7f3a' })
    assert.deepEqual(again, first)
    assert.equal((await client.listPets()).pets.length, 1)
    await assert.rejects(client.createPet({ ...pet, name: 'Other' }, { idempotencyKey: 'order-7f3a' }), (e: unknown) => e instanceof PetstoreError && e.code === 'idempotency_key_reused')
    await assert.rejects(client.createPet(pet, { idempotencyKey: 'has space' }), RangeError)
  })

  it('retries a GET answered 429 after Retry-After and then succeeds', async (t) => {
    const s = await startTestServer(t, { env: { RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_MS: '1000' } })
    const statuses: number[] = []
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: recordingFetch(statuses), retry: { retries: 3 } })
    for (let i = 0; i < 3; i++) assert.deepEqual((await client.listPets()).pets, [])
    assert.ok(statuses.includes(429), `a 429 was met and retried: ${statuses.join(',')}`)
    assert.equal(statuses.at(-1), 200)
    assert.equal(statuses.filter(x => x === 200).length, 3)
  })

  it('never sends a POST without idempotencyKey twice; with one it retries', async (t) => {
    const s = await startTestServer(t, { env: { RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: '1000' } })
    const statuses: number[] = []
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: recordingFetch(statuses), retry: { retries: 3 } })
    await client.listPets()
    const err = await client.createPet({ name: 'Rex', categoryId: 1 }).catch((e: unknown) => e)
    assert.ok(err instanceof PetstoreError && err.code === 'rate_limited', String(err))
    assert.ok(err.retryAfterMs !== undefined && err.retryAfterMs >= 1000 && err.retryAfterMs <= 2000, String(err.retryAfterMs))
    assert.deepEqual(statuses, [200, 429], 'the refused POST was sent once')

    statuses.length = 0
    const pet = await client.createPet({ name: 'Rex', categoryId: 1 }, { idempotencyKey: 'retry-me' })
    assert.equal(pet.name, 'Rex')
    assert.equal(statuses.at(-1), 201)
    const all: string[] = []
    for await (const p of client.pets()) all.push(p.name)
    assert.deepEqual(all, ['Rex'])
  })

  it('does not wait past maxDelayMs or the deadline: fails at once with the 429 and its Retry-After', async (t) => {
    const s = await startTestServer(t, { env: { RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: '60000' } })
    const statuses: number[] = []
    const capped = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: recordingFetch(statuses), retry: { maxDelayMs: 5000 } })
    await capped.listPets()
    await assert.rejects(capped.listPets(), (e: unknown) => e instanceof PetstoreError && e.status === 429 && e.retryAfterMs! > 5000)
    const deadline = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: recordingFetch(statuses), retry: { maxDelayMs: 120_000 }, timeoutMs: 10_000 })
    await assert.rejects(deadline.listPets(), (e: unknown) => e instanceof PetstoreError && e.code === 'rate_limited')
    assert.deepEqual(statuses, [200, 429, 429], 'no retry was sent')
    const off = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: recordingFetch(statuses), retry: false })
    await assert.rejects(off.listPets(), (e: unknown) => e instanceof PetstoreError && e.code === 'rate_limited')
    assert.equal(statuses.length, 4)
  })

  it('an AbortSignal stops the call, also while it waits to retry', async (t) => {
    const s = await startTestServer(t, { env: { RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: '60000' } })
    const controller = new AbortController()
    const reason = new Error('user left')
    const statuses: number[] = []
    const client = createClient({ baseUrl: s.baseUrl, apiKey: s.key, fetch: recordingFetch(statuses, st => { if (st === 429) controller.abort(reason) }), retry: { maxDelayMs: 120_000 } })
    await client.listPets()
    await assert.rejects(client.listPets({}, { signal: controller.signal }), (e: unknown) => e === reason)
    assert.deepEqual(statuses, [200, 429])
    await assert.rejects(client.getPet(1n, { signal: controller.signal }), (e: unknown) => e === reason)
    assert.equal(statuses.length, 2, 'an aborted signal sends nothing')

    const silent = createClient({ baseUrl: await silentServer(t), apiKey: s.key })
    const c2 = new AbortController()
    const pending = silent.listPets({}, { signal: c2.signal })
    c2.abort(reason)
    await assert.rejects(pending, (e: unknown) => e === reason)
  })

  it('a timeout ends a call the server never answers with PetstoreTimeoutError', async (t) => {
    const baseUrl = await silentServer(t)
    const client = createClient({ baseUrl, apiKey: 'psk_x', timeoutMs: 300 })
    const err = await client.listPets().catch((e: unknown) => e)
    assert.ok(err instanceof PetstoreTimeoutError, String(err))
    assert.equal(err.code, 'timeout')
    assert.equal(err.timeoutMs, 300)
    const perCall = await createClient({ baseUrl, apiKey: 'psk_x' }).createPet({ name: 'a', categoryId: 1 }, { timeoutMs: 200 }).catch((e: unknown) => e)
    assert.ok(perCall instanceof PetstoreTimeoutError && perCall.timeoutMs === 200)
    assert.throws(() => createClient({ baseUrl, apiKey: 'k', timeoutMs: 0 }), RangeError)
  })

  it('a refused connection is a PetstoreConnectionError naming the cause, not a bare TypeError', async () => {
    const port = await freePort()
    const client = createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'psk_x' })
    const err = await client.listPets().catch((e: unknown) => e)
    assert.ok(err instanceof PetstoreConnectionError, String(err))
    assert.equal(err.code, 'connection_failed')
    assert.equal(err.url, `http://127.0.0.1:${port}/v1/pets`)
    assert.match(err.message, new RegExp(`could not reach http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`))
    assert.ok(err.cause instanceof Error)
  })

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    assert.equal(parseRetryAfter('7', now), 7000)
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now), 30000)
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0)
    assert.equal(parseRetryAfter('soon', now), undefined)
    assert.equal(parseRetryAfter(null, now), undefined)
  })
})
