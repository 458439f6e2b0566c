import assert from 'node:assert/strict'
import { request } from 'node:http'
import { describe, it } from 'node:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import type { TestContext } from 'node:test'
import { createClient } from '../../packages/client/src/index.js'
import { checkingFetch, startTestServer, type TestServer } from '../helpers/server.js'

interface Answer { status: number, headers: Record<string, string | string[] | undefined>, body: Buffer }

/** One request over real HTTP, the body as the bytes on the wire (node:http decodes nothing). */
async function call (ts: TestServer, path: string, headers: Record<string, string> = {}, method = 'GET', payload?: string): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const req = request(`${ts.origin}${path}`, { method, headers: { ...ts.auth, ...headers } }, res => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(payload)
  })
}

const decode = (a: Answer): Buffer => {
  const coding = a.headers['content-encoding']
  if (coding === 'gzip') return gunzipSync(a.body)
  if (coding === 'br') return brotliDecompressSync(a.body)
  assert.equal(coding, undefined)
  return a.body
}

/** A server with `n` pets (created straight through its store: the reads are what is tested). */
async function serverWith (t: TestContext, n: number, env?: Record<string, string>): Promise<TestServer> {
  const ts = await startTestServer(t, env === undefined ? {} : { env })
  await Promise.all(Array.from({ length: n }, (_, i) => ts.store.createPet({ name: `pet-${i + 1}`, categoryId: BigInt(i % 97), status: 'available' })))
  return ts
}

/** The read cache's accounted bytes now. */
async function cacheBytes (ts: TestServer): Promise<number> {
  const m = (await ts.metrics.registry.getMetricsAsJSON()).find(m => m.name === 'petstore_read_cache_bytes')
  return Number(m?.values[0]?.value ?? 0)
}

const FULL_PAGE = '/v1/pets?limit=100'

describe('compressed answers (Accept-Encoding)', () => {
  it('a 100-pet page is served gzip and br on request, byte-identical after decoding, each coding with its own ETag', async (t) => {
    const ts = await serverWith(t, 101)
    const identity = await call(ts, FULL_PAGE)
    assert.equal(identity.status, 200)
    assert.equal(identity.headers['content-encoding'], undefined)
    assert.equal(identity.headers.vary, 'Accept-Encoding')
    assert.equal((JSON.parse(identity.body.toString()) as unknown[]).length, 100)
    const tag = String(identity.headers.etag)
    for (const coding of ['gzip', 'br']) {
      const a = await call(ts, FULL_PAGE, { 'accept-encoding': coding })
      assert.equal(a.status, 200, coding)
      assert.equal(a.headers['content-encoding'], coding)
      assert.equal(a.headers.vary, 'Accept-Encoding')
      assert.equal(a.headers['content-type'], 'application/json; charset=utf-8')
      assert.equal(a.headers.etag, `${tag.slice(0, -1)}-${coding}"`)
      assert.equal(a.headers.link, identity.headers.link)
      assert.equal(a.headers['content-length'], String(a.body.length))
      assert.ok(a.body.length < identity.body.length / 4, `${coding}: ${a.body.length} bytes for ${identity.body.length}`)
      assert.ok(decode(a).equals(identity.body), `${coding} decodes to the identity body`)
    }
  })

  it('compresses a cached representation once: a second request gets the same bytes, and the cache accounts for them once', async (t) => {
    const ts = await serverWith(t, 101)
    await call(ts, FULL_PAGE)
    const before = await cacheBytes(ts)
    const first = await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip' })
    const grown = await cacheBytes(ts)
    assert.ok(grown >= before + first.body.length, `the cache accounts the gzip bytes: ${before} → ${grown}`)
    const second = await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip' })
    assert.ok(second.body.equals(first.body))
    assert.equal(second.headers.etag, first.headers.etag)
    assert.equal(await cacheBytes(ts), grown, 'a second gzip request adds nothing')
    await call(ts, FULL_PAGE, { 'accept-encoding': 'br' })
    assert.ok(await cacheBytes(ts) > grown, 'br is kept beside gzip')
  })

  it('follows q-values, `*`, and identity refused (RFC 9110 §12.5.3)', async (t) => {
    const ts = await serverWith(t, 101)
    const cases: Array<[string, string | undefined]> = [
      ['gzip, deflate, br', 'br'], // a tie: the smaller coding
      ['gzip;q=1, br;q=0.5', 'gzip'],
      ['br;q=0, *', 'gzip'], // `*` stands for the codings not named
      ['GZIP', 'gzip'],
      ['*', 'br'],
      ['gzip;q=0, br;q=0', undefined],
      ['identity', undefined],
      ['identity;q=1, gzip;q=0.5', undefined], // the client prefers identity
      ['compress, deflate', undefined],
      ['', undefined], // empty: no coding wanted
      ['identity;q=0, compress', undefined] // nothing acceptable: the header is disregarded (RFC 9110 §12.1)
    ]
    const identity = await call(ts, FULL_PAGE)
    for (const [header, expected] of cases) {
      const a = await call(ts, FULL_PAGE, { 'accept-encoding': header })
      assert.equal(a.status, 200, header)
      assert.equal(a.headers['content-encoding'], expected, header)
      assert.equal(a.headers.vary, 'Accept-Encoding', header)
      assert.ok(decode(a).equals(identity.body), header)
    }
  })

  it('small answers stay identity unless identity is refused; errors and creates are never compressed', async (t) => {
    const ts = await serverWith(t, 1)
    const pet = await call(ts, '/v1/pets/1', { 'accept-encoding': 'gzip, br' })
    assert.equal(pet.status, 200)
    assert.ok(pet.body.length < 1024)
    assert.equal(pet.headers['content-encoding'], undefined)
    assert.equal(pet.headers.vary, 'Accept-Encoding', 'negotiable, so Vary even on an identity answer')
    const refused = await call(ts, '/v1/pets/1', { 'accept-encoding': 'identity;q=0, gzip' })
    assert.equal(refused.headers['content-encoding'], 'gzip')
    assert.ok(decode(refused).equals(pet.body))
    const missing = await call(ts, '/v1/pets/99', { 'accept-encoding': 'gzip' })
    assert.equal(missing.status, 404)
    assert.equal(missing.headers['content-encoding'], undefined)
    assert.equal(JSON.parse(missing.body.toString()).code, 'not_found')
    const created = await call(ts, '/v1/pets', { 'accept-encoding': 'gzip', 'content-type': 'application/json' }, 'POST', JSON.stringify({ name: 'Rex', categoryId: 1 }))
    assert.equal(created.status, 201)
    assert.equal(created.headers['content-encoding'], undefined)
    assert.equal(JSON.parse(created.body.toString()).name, 'Rex')
  })

  it('HEAD answers the headers GET does, coding included', async (t) => {
    const ts = await serverWith(t, 101)
    const get = await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip' })
    const head = await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip' }, 'HEAD')
    assert.equal(head.status, 200)
    assert.equal(head.body.length, 0)
    for (const name of ['content-encoding', 'content-length', 'etag', 'vary', 'content-type', 'link']) {
      assert.equal(head.headers[name], get.headers[name], name)
    }
  })

  it('revalidates per coding: 304 for the coding\'s own tag; If-Match holds with the tag of any coding', async (t) => {
    const ts = await serverWith(t, 101)
    const identity = await call(ts, FULL_PAGE)
    const gzip = await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip' })
    const gzipTag = String(gzip.headers.etag)
    const same = await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip', 'if-none-match': gzipTag })
    assert.equal(same.status, 304)
    assert.equal(same.body.length, 0)
    assert.equal(same.headers.etag, gzipTag)
    assert.equal(same.headers.vary, 'Accept-Encoding')
    assert.equal(same.headers['content-encoding'], undefined)
    assert.equal((await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip', 'if-none-match': `W/${gzipTag}` })).status, 304)
    // A tag of another coding is no match: the client gets the coding it asked for now.
    const other = await call(ts, FULL_PAGE, { 'accept-encoding': 'br', 'if-none-match': gzipTag })
    assert.equal(other.status, 200)
    assert.equal(other.headers['content-encoding'], 'br')
    const plain = await call(ts, FULL_PAGE, { 'if-none-match': gzipTag })
    assert.equal(plain.status, 200)
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.equal((await call(ts, FULL_PAGE, { 'if-none-match': String(identity.headers.etag) })).status, 304)
    // If-Match: the gzip tag holds for an identity read of the same content, a stale tag does not.
    assert.equal((await call(ts, FULL_PAGE, { 'if-match': gzipTag })).status, 200)
    assert.equal((await call(ts, FULL_PAGE, { 'accept-encoding': 'br', 'if-match': String(identity.headers.etag) })).status, 200)
    const stale = await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip', 'if-match': '"stale-gzip"' })
    assert.equal(stale.status, 412)
    assert.equal(JSON.parse(stale.body.toString()).code, 'precondition_failed')
  })

  it('a create shows in the gzip answer of the page it lands on (not cached), with a new tag', async (t) => {
    const ts = await serverWith(t, 30)
    const newest = '/v1/pets?limit=100'
    const before = await call(ts, newest, { 'accept-encoding': 'gzip' })
    assert.equal(before.headers['content-encoding'], 'gzip')
    assert.equal((JSON.parse(decode(before).toString()) as unknown[]).length, 30)
    const created = await call(ts, '/v1/pets', { 'content-type': 'application/json' }, 'POST', JSON.stringify({ name: 'Newcomer', categoryId: 5 }))
    assert.equal(created.status, 201)
    const after = await call(ts, newest, { 'accept-encoding': 'gzip', 'if-none-match': String(before.headers.etag) })
    assert.equal(after.status, 200)
    assert.equal(after.headers['content-encoding'], 'gzip')
    assert.notEqual(after.headers.etag, before.headers.etag)
    const pets = JSON.parse(decode(after).toString()) as Array<{ name: string }>
    assert.equal(pets.length, 31)
    assert.equal(pets.at(-1)?.name, 'Newcomer')
    assert.ok(decode(after).equals((await call(ts, newest)).body))
  })

  it('the typed client (fetch: asks for compression, decodes it) reads a compressed page as the identity one', async (t) => {
    const ts = await serverWith(t, 101)
    const codings: Array<string | null> = []
    const recording: typeof fetch = async (input, init) => {
      const res = await checkingFetch(input, init)
      codings.push(res.headers.get('content-encoding'))
      return res
    }
    const client = createClient({ baseUrl: ts.baseUrl, apiKey: ts.key, fetch: recording, onDeprecation: () => {} })
    const page = await client.listPets({ limit: 100 })
    assert.ok(codings[0] === 'gzip' || codings[0] === 'br', `fetch was answered compressed: ${codings[0]}`)
    assert.deepEqual(JSON.parse(JSON.stringify(page.pets, (_k, v: unknown) => typeof v === 'bigint' ? Number(v) : v)), JSON.parse((await call(ts, FULL_PAGE)).body.toString()))
  })

  it('Vary keeps Origin when CORS is on', async (t) => {
    const ts = await serverWith(t, 101, { CORS_ORIGINS: 'https://app.example' })
    const a = await call(ts, FULL_PAGE, { 'accept-encoding': 'gzip', origin: 'https://app.example' })
    assert.equal(a.status, 200)
    assert.equal(a.headers.vary, 'Origin, Accept-Encoding')
    assert.equal(a.headers['content-encoding'], 'gzip')
  })

  it('the OpenAPI document: gzip and br, byte-identical after decoding, a tag per coding, revalidated per coding', async (t) => {
    const ts = await startTestServer(t)
    const identity = await call(ts, '/openapi.json')
    assert.equal(identity.status, 200)
    assert.equal(identity.headers.vary, 'Accept-Encoding')
    const tag = String(identity.headers.etag)
    for (const coding of ['gzip', 'br']) {
      const a = await call(ts, '/openapi.json', { 'accept-encoding': `${coding}, identity;q=0.5` })
      assert.equal(a.headers['content-encoding'], coding)
      assert.equal(a.headers.etag, `${tag.slice(0, -1)}-${coding}"`)
      assert.ok(decode(a).equals(identity.body), coding)
      assert.ok((await call(ts, '/openapi.json', { 'accept-encoding': coding })).body.equals(a.body), `${coding}: the same bytes again`)
      assert.equal((await call(ts, '/openapi.json', { 'accept-encoding': coding, 'if-none-match': String(a.headers.etag) })).status, 304)
      assert.equal((await call(ts, '/openapi.json', { 'accept-encoding': coding, 'if-none-match': tag })).status, 200)
      assert.equal((await call(ts, '/openapi.json', { 'if-match': String(a.headers.etag) })).status, 200)
    }
  })
})
