import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { createApiKey } from '../../src/services/api-keys.js'
import type { Store } from '../../src/store/store.js'
import { STORES, buildTestApp } from '../helpers/app.js'
import { errorCode, fcParams, type GenPet, newPet, parseExact, status } from '../helpers/property.js'

/*
 * A stateful model test: random sequences of create / list / page-walk / get / key create / revoke,
 * each checked against a plain in-memory model of what the service must hold.
 */
const RUNS = Number(process.env.FC_MODEL_RUNS ?? 60)

interface ModelPet { id: bigint, name: string, categoryId: bigint, status: string }
interface Model { pets: ModelPet[], keys: Array<{ key: string, id: number, revoked: boolean }> }
interface Real { app: FastifyInstance, store: Store }
type Cmd = fc.AsyncCommand<Model, Real>

const authOf = (m: Model, k: number) => {
  const key = m.keys[k % m.keys.length]!
  return { key, headers: { authorization: `Bearer ${key.key}` } }
}
const expect401 = (res: { statusCode: number, body: string, headers: Record<string, unknown> }) => {
  assert.equal(res.statusCode, 401, res.body)
  assert.equal(errorCode(res), 'unauthorized')
}

class CreatePet implements Cmd {
  constructor (readonly pet: GenPet, readonly k: number) {}
  check = () => true
  async run (m: Model, r: Real): Promise<void> {
    const { key, headers } = authOf(m, this.k)
    const body = `{"name":${JSON.stringify(this.pet.name)},"categoryId":${this.pet.categoryId}${this.pet.status === undefined ? '' : `,"status":"${this.pet.status}"`}}`
    const res = await r.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...headers, 'content-type': 'application/json' }, payload: body })
    if (key.revoked) return expect401(res)
    assert.equal(res.statusCode, 201, res.body)
    const got = parseExact(res.body) as ModelPet
    const expected = { id: got.id, name: this.pet.name, categoryId: this.pet.categoryId, status: this.pet.status ?? 'available' }
    assert.deepEqual(got, expected)
    const last = m.pets.at(-1)
    if (last !== undefined) assert.ok(got.id > last.id, 'ids increase')
    m.pets.push(expected)
  }

  toString = () => `CreatePet(${JSON.stringify(this.pet.name)}, ${this.pet.categoryId}, ${this.pet.status}, key ${this.k})`
}

class ListFirstPage implements Cmd {
  constructor (readonly limit: number | undefined, readonly status: string | undefined, readonly k: number) {}
  check = () => true
  async run (m: Model, r: Real): Promise<void> {
    const { key, headers } = authOf(m, this.k)
    const q = new URLSearchParams()
    if (this.limit !== undefined) q.set('limit', String(this.limit))
    if (this.status !== undefined) q.set('status', this.status)
    const res = await r.app.inject({ url: `/v1/pets?${q}`, headers })
    if (key.revoked) return expect401(res)
    assert.equal(res.statusCode, 200, res.body)
    const matching = m.pets.filter(p => this.status === undefined || p.status === this.status)
    const limit = this.limit ?? 20
    assert.deepEqual(parseExact(res.body), matching.slice(0, limit))
    assert.equal(res.headers.link !== undefined, matching.length > limit, 'Link rel="next" iff more pets follow')
  }

  toString = () => `ListFirstPage(limit ${this.limit}, ${this.status}, key ${this.k})`
}

class WalkPages implements Cmd {
  constructor (readonly limit: number, readonly status: string | undefined) {}
  check = (m: Readonly<Model>) => m.keys.some(k => !k.revoked)
  async run (m: Model, r: Real): Promise<void> {
    const key = m.keys.find(k => !k.revoked)!
    const headers = { authorization: `Bearer ${key.key}` }
    const seen: unknown[] = []
    let url: string | undefined = `/v1/pets?limit=${this.limit}${this.status === undefined ? '' : `&status=${this.status}`}`
    let pages = 0
    while (url !== undefined) {
      const res: { statusCode: number, body: string, headers: Record<string, unknown> } = await r.app.inject({ url, headers })
      assert.equal(res.statusCode, 200, res.body)
      const page = parseExact(res.body) as unknown[]
      assert.ok(page.length <= this.limit)
      seen.push(...page)
      pages++
      url = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ''))?.[1]
    }
    const matching = m.pets.filter(p => this.status === undefined || p.status === this.status)
    assert.deepEqual(seen, matching)
    assert.equal(pages, Math.max(1, Math.ceil(matching.length / this.limit)))
  }

  toString = () => `WalkPages(limit ${this.limit}, ${this.status})`
}

class GetPet implements Cmd {
  constructor (readonly pick: number, readonly k: number, readonly offset: bigint) {}
  check = () => true
  async run (m: Model, r: Real): Promise<void> {
    const { key, headers } = authOf(m, this.k)
    // An existing id, or one around/past the known ids (deleted ids never exist: there is no delete).
    const known = m.pets.length > 0 && this.offset === 0n ? m.pets[this.pick % m.pets.length]!.id : (m.pets.at(-1)?.id ?? 0n) + this.offset
    const res = await r.app.inject({ url: `/v1/pets/${known}`, headers })
    assert.ok(res.headers.deprecation !== undefined && res.headers.sunset !== undefined)
    if (key.revoked) return expect401(res)
    const pet = m.pets.find(p => p.id === known)
    if (pet === undefined) {
      assert.equal(res.statusCode, 404, res.body)
      assert.equal(errorCode(res), 'not_found')
    } else {
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(parseExact(res.body), pet)
    }
  }

  toString = () => `GetPet(pick ${this.pick}, offset ${this.offset}, key ${this.k})`
}

class CreateKey implements Cmd {
  check = (m: Readonly<Model>) => m.keys.length < 6
  async run (m: Model, r: Real): Promise<void> {
    const { key, record } = await createApiKey(r.store, 'model')
    m.keys.push({ key, id: record.id, revoked: false })
  }

  toString = () => 'CreateKey'
}

class RevokeKey implements Cmd {
  constructor (readonly k: number) {}
  check = () => true
  async run (m: Model, r: Real): Promise<void> {
    const key = m.keys[this.k % m.keys.length]!
    assert.equal(await r.store.revokeApiKey(key.id, new Date()), true)
    key.revoked = true
  }

  toString = () => `RevokeKey(${this.k})`
}

const k = fc.nat({ max: 5 })
const commands = [
  fc.tuple(newPet, k).map(([p, i]) => new CreatePet(p, i)),
  fc.tuple(newPet, k).map(([p, i]) => new CreatePet(p, i)),
  fc.tuple(fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }), fc.option(status, { nil: undefined }), k).map(([l, s, i]) => new ListFirstPage(l, s, i)),
  fc.tuple(fc.integer({ min: 1, max: 7 }), fc.option(status, { nil: undefined })).map(([l, s]) => new WalkPages(l, s)),
  fc.tuple(fc.nat(), k, fc.oneof(fc.constant(0n), fc.bigInt({ min: -3n, max: 3n }))).map(([p, i, o]) => new GetPet(p, i, o)),
  fc.constant(new CreateKey()),
  k.map(i => new RevokeKey(i))
]

for (const store of STORES) {
  describe(`property: stateful model of the pets API [${store}]`, () => {
    it('random sequences of create/list/page-walk/get/key create/revoke agree with an in-memory model', async (t) => {
      // One service over a real SQLite file for the whole property (starting one per run costs a
      // second for the writer thread); each run starts its model from what the store already holds,
      // with a fresh key. KEY_CACHE_TTL_MS=0 makes a revocation take effect at once.
      const ta = await buildTestApp(t, { store, env: { KEY_CACHE_TTL_MS: '0' } })
      let runs = 0
      let steps = 0
      await fc.assert(fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: '+1' }), async (cmds) => {
        const { key, record } = await createApiKey(ta.store, 'run')
        const pets = (await ta.store.listPets({ afterId: null, limit: 1_000_000, status: undefined })).map(p => ({ ...p }))
        const model: Model = { pets, keys: [{ key, id: record.id, revoked: false }] }
        await fc.asyncModelRun(() => ({ model, real: { app: ta.app, store: ta.store } }), cmds)
        steps += [...cmds].length
        runs++
      }), fcParams(RUNS))
      t.diagnostic(`${runs} random command sequences (${steps} commands) matched the model`)
    })
  })
}
