import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Response } from 'light-my-request'
import { CURSOR_MAX_LENGTH, CURSOR_PATTERN } from '../../src/schemas/pets.js'
import { CursorCodec } from '../../src/services/cursor.js'
import { STORES, assertError, buildTestApp, createPet, deletePetInDb, petsInDb, postPet, type TestApp } from '../helpers/app.js'

const INT64_MIN = '-9223372036854775808'
const INT64_MAX = '9223372036854775807'
const CATEGORY_RULE = `body field 'categoryId' must be an integer from ${INT64_MIN} to ${INT64_MAX}`
const STATUS_RULE = "body field 'status' must be one of available, pending, sold"
const NAME_LENGTH_RULE = "body field 'name' must be 1 to 255 characters long"
const NOT_AN_OBJECT = 'request body must be a JSON object with name and categoryId'
const NOT_JSON_MEDIA = 'request body must be application/json'
const PET_ID_RULE = `path parameter 'petId' must be an integer from ${INT64_MIN} to ${INT64_MAX}`
const LIMIT_RULE = "query parameter 'limit' must be an integer from 1 to 100"
const QUERY_STATUS_RULE = "query parameter 'status' must be one of available, pending, sold"
const CURSOR_LENGTH_RULE = `query parameter 'cursor' must be 1 to ${CURSOR_MAX_LENGTH} characters long`
const BAD_CURSOR = "query parameter 'cursor' is not a cursor this service issued for this status filter"

const DEPRECATION = '@1767225600' // 2026-01-01T00:00:00Z
const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT'
const SUCCESSOR = '</v1/pets>; rel="successor-version"'
const SUNSET_MS = Date.parse('2030-12-05T00:00:00Z')

function jsonParseMessage (text: string): string {
  try {
    JSON.parse(text)
  } catch (err) {
    return (err as Error).message
  }
  throw new Error('valid JSON')
}

const nextLink = (res: Response): string | undefined => {
  const link = res.headers.link
  if (link === undefined) return undefined
  const m = /^<([^>]+)>; rel="next"$/.exec(String(link))
  assert.ok(m, `malformed Link: ${String(link)}`)
  return m[1]
}
const ids = (res: Response): number[] => res.json().map((p: { id: number }) => p.id)

async function createMany (ta: TestApp, n: number, status?: (i: number) => string): Promise<number[]> {
  const made = await Promise.all(Array.from({ length: n }, (_, i) =>
    createPet(ta, { name: `pet ${i}`, categoryId: i, ...(status !== undefined ? { status: status(i) } : {}) })))
  return made.map(p => p.id).sort((a, b) => a - b)
}

for (const store of STORES) {
  describe(`POST /v1/pets (createPet) [${store}]`, () => {
    it('answers 201 with the pet, its id and Location, status defaulting to available', async (t) => {
      const ta = await buildTestApp(t, { store })
      const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth, payload: { name: 'Rex', categoryId: 7 } })
      assert.equal(res.statusCode, 201)
      assert.match(String(res.headers['content-type']), /^application\/json/)
      const pet = res.json()
      assert.equal(typeof pet.id, 'number')
      assert.deepEqual(pet, { id: pet.id, name: 'Rex', categoryId: 7, status: 'available' })
      assert.equal(res.headers.location, `/v1/pets/${pet.id}`)
      assert.deepEqual((await petsInDb(ta)), [{ id: BigInt(pet.id), name: 'Rex', category_id: 7n, status: 'available' }])
      const got = await ta.app.inject({ url: `/v1/pets/${pet.id}`, headers: ta.auth })
      assert.deepEqual(got.json(), pet)
    })

    it('stores each status of the enum as sent', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const status of ['available', 'pending', 'sold']) {
        const pet = await createPet(ta, { name: status, categoryId: 1, status })
        assert.equal(pet.status, status)
      }
      assert.deepEqual((await petsInDb(ta)).map(p => p.status), ['available', 'pending', 'sold'])
    })

    it('accepts application/json with a UTF-8 charset parameter, in any spelling', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const type of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'application/json; charset="utf-8"', 'Application/JSON', 'application/json; charset=utf8']) {
        const res = await postPet(ta, '{"name":"Rex","categoryId":1}', { 'content-type': type })
        assert.equal(res.statusCode, 201, `${type}: ${res.body}`)
      }
    })

    it('keeps categoryId exact over the whole int64 range, past 2^53 included', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const digits of [INT64_MAX, INT64_MIN, '9007199254740993', '-9007199254740993', '0', '1234567890123456']) {
        const res = await postPet(ta, `{"name":"Big","categoryId":${digits}}`)
        assert.equal(res.statusCode, 201, res.body)
        assert.match(res.body, new RegExp(`"categoryId":${digits}[,}]`))
        const id = /"id":(\d+)/.exec(res.body)![1]!
        const got = await ta.app.inject({ url: `/v1/pets/${id}`, headers: ta.auth })
        assert.match(got.body, new RegExp(`"categoryId":${digits}[,}]`))
        const listed = await ta.app.inject({ url: '/v1/pets?limit=100', headers: ta.auth })
        assert.match(listed.body, new RegExp(`"id":${id},"name":"Big","categoryId":${digits}[,}]`))
        assert.equal((await petsInDb(ta)).find(p => p.id === BigInt(id))?.category_id, BigInt(digits))
      }
    })

    it('reads a categoryId by its exact value, and a repeated key as JSON.parse does (the last wins)', async (t) => {
      const ta = await buildTestApp(t, { store })
      const cases: Array<[string, string]> = [
        ['1e3', '1000'], ['1E+3', '1000'], ['7.0', '7'], ['100e-2', '1'], ['-0', '0'],
        ['9.2e18', '9200000000000000000'], ['9.223372036854775807e18', INT64_MAX], ['-9.223372036854775808e18', INT64_MIN], [`${INT64_MAX}.000`, INT64_MAX]
      ]
      for (const [written, exact] of cases) {
        const res = await postPet(ta, `{"name":"Big","categoryId":${written}}`)
        assert.equal(res.statusCode, 201, `${written}: ${res.body}`)
        assert.match(res.body, new RegExp(`"categoryId":${exact}[,}]`), written)
      }
      const dup = await postPet(ta, '{"name":"first","categoryId":1,"name":"last","categoryId":12345678901234567890,"categoryId":12345678901234567}')
      assert.equal(dup.statusCode, 201, dup.body)
      assert.match(dup.body, /"name":"last","categoryId":12345678901234567,/)
    })

    it('counts name length in Unicode code points: 255 fit, 256 do not', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const name of ['a'.repeat(255), '🐶'.repeat(255), 'é'.repeat(255), 'x']) {
        const res = await postPet(ta, JSON.stringify({ name, categoryId: 1 }))
        assert.equal(res.statusCode, 201, res.body)
        assert.equal(res.json().name, name)
      }
      assert.deepEqual((await petsInDb(ta)).map(p => p.name), ['a'.repeat(255), '🐶'.repeat(255), 'é'.repeat(255), 'x'])
      for (const name of ['a'.repeat(256), '🐶'.repeat(256)]) {
        assertError(await postPet(ta, JSON.stringify({ name, categoryId: 1 })), 400, 'validation_failed', NAME_LENGTH_RULE)
      }
    })

    it('names every broken rule of a body in one 400, in message and details, and stores nothing', async (t) => {
      const ta = await buildTestApp(t, { store })
      const res = await postPet(ta, JSON.stringify({ name: '  ', categoryId: 'one', status: 'lost', color: 'red' }))
      const body = res.json() as { code: string, message: string, status: number, details: Array<{ field: string, message: string }> }
      assert.equal(res.statusCode, 400)
      assert.equal(body.code, 'validation_failed')
      assert.deepEqual(body.details.map(d => d.field).sort(), ['categoryId', 'color', 'name', 'status'])
      for (const d of body.details) assert.ok(body.message.includes(d.message), `${d.message} in ${body.message}`)
      assert.deepEqual(new Set(body.details.map(d => d.message)), new Set([
        "body field 'name' must not be blank",
        "body field 'categoryId' must be an integer from -9223372036854775808 to 9223372036854775807",
        "body field 'status' must be one of available, pending, sold",
        "body field 'color' is not allowed (allowed fields are name, categoryId, status)"
      ]))
      // One broken rule: the same shape, one detail.
      assertError(await postPet(ta, JSON.stringify({ name: 'Rex' })), 400, 'validation_failed', "body field 'categoryId' is required")
      assert.deepEqual((await postPet(ta, JSON.stringify({ name: 'Rex' }))).json().details, [{ field: 'categoryId', message: "body field 'categoryId' is required" }])
      assert.deepEqual((await petsInDb(ta)), [])
    })

    it('accepts a body of exactly BODY_LIMIT bytes and refuses one byte more with 413', async (t) => {
      const ta = await buildTestApp(t, { store })
      const json = '{"name":"Rex","categoryId":1}'
      const exact = json + ' '.repeat(ta.config.bodyLimit - json.length)
      assert.equal((await postPet(ta, exact)).statusCode, 201)
      assertError(await postPet(ta, exact + ' '), 413, 'payload_too_large', 'request body is larger than the body limit')
      assertError(await postPet(ta, JSON.stringify({ name: 'a'.repeat(20000), categoryId: 1 })), 413, 'payload_too_large', 'request body is larger than the body limit')
    })

    it('honours a configured BODY_LIMIT', async (t) => {
      const ta = await buildTestApp(t, { store, env: { BODY_LIMIT: '256' } })
      assertError(await postPet(ta, JSON.stringify({ name: 'a'.repeat(250), categoryId: 1 })), 413, 'payload_too_large', 'request body is larger than the body limit')
      assert.deepEqual((await petsInDb(ta)), [])
    })

    it('answers every invalid request with the exact Error, and stores nothing', async (t) => {
      const ta = await buildTestApp(t, { store })
      const cases: Array<[string, string | Buffer, Record<string, string>, number, string, string]> = [
        // media type
        ['text/plain', '{"name":"a","categoryId":1}', { 'content-type': 'text/plain' }, 415, 'unsupported_media_type', NOT_JSON_MEDIA],
        ['application/xml', '<pet/>', { 'content-type': 'application/xml' }, 415, 'unsupported_media_type', NOT_JSON_MEDIA],
        ['application/json-seq', '{"name":"a","categoryId":1}', { 'content-type': 'application/json-seq' }, 415, 'unsupported_media_type', NOT_JSON_MEDIA],
        ['form data', 'name=a&categoryId=1', { 'content-type': 'application/x-www-form-urlencoded' }, 415, 'unsupported_media_type', NOT_JSON_MEDIA],
        ['charset latin1', '{"name":"a","categoryId":1}', { 'content-type': 'application/json; charset=iso-8859-1' }, 415, 'unsupported_media_type', 'charset iso-8859-1 is not supported; send application/json in UTF-8'],
        ['charset utf-16', '{"name":"a","categoryId":1}', { 'content-type': 'application/json; charset=utf-16' }, 415, 'unsupported_media_type', 'charset utf-16 is not supported; send application/json in UTF-8'],
        // JSON itself
        ['malformed JSON', '{"name":', {}, 400, 'invalid_json', `request body is not valid JSON: ${jsonParseMessage('{"name":')}`],
        ['a trailing comma', '{"name":"a","categoryId":1,}', {}, 400, 'invalid_json', `request body is not valid JSON: ${jsonParseMessage('{"name":"a","categoryId":1,}')}`],
        ['white space only', '   ', {}, 400, 'invalid_json', `request body is not valid JSON: ${jsonParseMessage('   ')}`],
        ['invalid UTF-8 bytes', Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), {}, 400, 'invalid_json', 'request body is not valid UTF-8'],
        ['a truncated UTF-8 sequence', Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xe2, 0x82]), Buffer.from('","categoryId":1}')]), {}, 400, 'invalid_json', 'request body is not valid UTF-8'],
        ['__proto__', '{"__proto__":{"admin":true},"name":"a","categoryId":1}', {}, 400, 'invalid_json', 'request body uses a forbidden key (__proto__ or constructor.prototype)'],
        ['constructor.prototype', '{"constructor":{"prototype":{"admin":true}},"name":"a","categoryId":1}', {}, 400, 'invalid_json', 'request body uses a forbidden key (__proto__ or constructor.prototype)'],
        // shape
        ['an empty body', '', {}, 400, 'validation_failed', 'request body is required: a JSON object with name and categoryId'],
        ['an array', '[{"name":"a","categoryId":1}]', {}, 400, 'validation_failed', NOT_AN_OBJECT],
        ['null', 'null', {}, 400, 'validation_failed', NOT_AN_OBJECT],
        ['a string', '"Rex"', {}, 400, 'validation_failed', NOT_AN_OBJECT],
        ['a number', '7', {}, 400, 'validation_failed', NOT_AN_OBJECT],
        ['an unknown field', '{"name":"a","categoryId":1,"color":"red"}', {}, 400, 'validation_failed', "body field 'color' is not allowed (allowed fields are name, categoryId, status)"],
        ['a client-sent id', '{"id":5,"name":"a","categoryId":1}', {}, 400, 'validation_failed', "body field 'id' is assigned by the service and must not be sent"],
        ['a null id', '{"name":"a","categoryId":1,"id":null}', {}, 400, 'validation_failed', "body field 'id' is assigned by the service and must not be sent"],
        // name
        ['name missing', '{"categoryId":1}', {}, 400, 'validation_failed', "body field 'name' is required"],
        ['name a number', '{"name":5,"categoryId":1}', {}, 400, 'validation_failed', "body field 'name' must be a string"],
        ['name null', '{"name":null,"categoryId":1}', {}, 400, 'validation_failed', "body field 'name' must be a string"],
        ['name an array', '{"name":["a"],"categoryId":1}', {}, 400, 'validation_failed', "body field 'name' must be a string"],
        ['name empty', '{"name":"","categoryId":1}', {}, 400, 'validation_failed', NAME_LENGTH_RULE],
        ['name blank', '{"name":"   ","categoryId":1}', {}, 400, 'validation_failed', "body field 'name' must not be blank"],
        ['name tabs and newlines', '{"name":"\\t\\n\\r","categoryId":1}', {}, 400, 'validation_failed', "body field 'name' must not be blank"],
        ['name Unicode spaces', '{"name":"\\u00a0\\u2003\\u3000","categoryId":1}', {}, 400, 'validation_failed', "body field 'name' must not be blank"],
        ['name 256 characters', JSON.stringify({ name: 'n'.repeat(256), categoryId: 1 }), {}, 400, 'validation_failed', NAME_LENGTH_RULE],
        ['name with a lone surrogate', '{"name":"Rex\\ud83d","categoryId":1}', {}, 400, 'validation_failed', "body field 'name' must be well-formed Unicode (no lone surrogate escapes)"],
        // categoryId
        ['categoryId missing', '{"name":"a"}', {}, 400, 'validation_failed', "body field 'categoryId' is required"],
        ['categoryId the string "7"', '{"name":"a","categoryId":"7"}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId 1.5', '{"name":"a","categoryId":1.5}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId null', '{"name":"a","categoryId":null}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId true', '{"name":"a","categoryId":true}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId 2^63', '{"name":"a","categoryId":9223372036854775808}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId -2^63-1', '{"name":"a","categoryId":-9223372036854775809}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId 20 digits', '{"name":"a","categoryId":99999999999999999999}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId 1e19', '{"name":"a","categoryId":1e19}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId past 2^53 with a fraction', '{"name":"a","categoryId":9007199254740993.5}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId a fraction a double rounds to an integer', '{"name":"a","categoryId":12345678.000000001}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['categoryId 1e-400', '{"name":"a","categoryId":1e-400}', {}, 400, 'validation_failed', CATEGORY_RULE],
        ['name a lone low surrogate', '{"name":"\\udc36x","categoryId":1}', {}, 400, 'validation_failed', "body field 'name' must be well-formed Unicode (no lone surrogate escapes)"],
        // status
        ['status unknown', '{"name":"a","categoryId":1,"status":"lost"}', {}, 400, 'validation_failed', STATUS_RULE],
        ['status in the wrong case', '{"name":"a","categoryId":1,"status":"Available"}', {}, 400, 'validation_failed', STATUS_RULE],
        ['status upper case', '{"name":"a","categoryId":1,"status":"SOLD"}', {}, 400, 'validation_failed', STATUS_RULE],
        ['status null', '{"name":"a","categoryId":1,"status":null}', {}, 400, 'validation_failed', STATUS_RULE],
        ['status a number', '{"name":"a","categoryId":1,"status":1}', {}, 400, 'validation_failed', STATUS_RULE]
      ]
      for (const [label, payload, headers, status, code, message] of cases) {
        await t.test(label, async () => {
          assertError(await postPet(ta, payload, headers), status, code, message)
        })
      }
      await t.test('a body without any Content-Type', async () => {
        const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth, payload: Buffer.from('{"name":"a","categoryId":1}') })
        assertError(res, 415, 'unsupported_media_type', NOT_JSON_MEDIA)
      })
      await t.test('no body and no Content-Type', async () => {
        const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth })
        assertError(res, 400, 'validation_failed', NOT_AN_OBJECT)
      })
      assert.deepEqual((await petsInDb(ta)), [], 'a refused request stored a pet')
      assert.deepEqual((await ta.app.inject({ url: '/v1/pets', headers: ta.auth })).json(), [])
    })

    it('never reuses an id, even of a row gone from the table', async (t) => {
      const ta = await buildTestApp(t, { store })
      await createPet(ta, { name: 'a', categoryId: 1 })
      const second = await createPet(ta, { name: 'b', categoryId: 1 })
      await deletePetInDb(ta, second.id)
      const third = await createPet(ta, { name: 'c', categoryId: 1 })
      assert.ok(third.id > second.id, `id ${third.id} reused`)
    })

    it('loses and duplicates nothing under 200 concurrent creates', async (t) => {
      const ta = await buildTestApp(t, { store })
      const responses = await Promise.all(Array.from({ length: 200 }, (_, i) =>
        postPet(ta, JSON.stringify({ name: `pet-${i}`, categoryId: i, status: ['available', 'pending', 'sold'][i % 3] }))))
      const created = responses.map(r => { assert.equal(r.statusCode, 201, r.body); return r.json() as { id: number, name: string, categoryId: number } })
      assert.equal(new Set(created.map(p => p.id)).size, 200, 'duplicate ids')
      for (const p of created) assert.equal(p.name, `pet-${p.categoryId}`, 'a response carries another request\'s pet')
      const rows = (await petsInDb(ta))
      assert.equal(rows.length, 200)
      assert.deepEqual(rows.map(r => r.name).sort(), created.map(p => p.name).sort())
      assert.deepEqual(rows.map(r => Number(r.id)), created.map(p => p.id).sort((a, b) => a - b))
    })
  })

  describe(`GET /v1/pets (listPets) [${store}]`, () => {
    it('pages 20 by default and at most 100, with Link rel="next" only while more follow', async (t) => {
      const ta = await buildTestApp(t, { store })
      const made = await createMany(ta, 105)

      const first = await ta.app.inject({ url: '/v1/pets', headers: ta.auth })
      assert.equal(first.statusCode, 200)
      assert.deepEqual(ids(first), made.slice(0, 20))
      assert.match(String(first.headers.link), /^<\/v1\/pets\?limit=20&cursor=[A-Za-z0-9_-]+>; rel="next"$/)

      const max = await ta.app.inject({ url: '/v1/pets?limit=100', headers: ta.auth })
      assert.deepEqual(ids(max), made.slice(0, 100))
      const rest = await ta.app.inject({ url: nextLink(max)!, headers: ta.auth })
      assert.deepEqual(ids(rest), made.slice(100))
      assert.equal(rest.headers.link, undefined)

      const one = await ta.app.inject({ url: '/v1/pets?limit=1', headers: ta.auth })
      assert.deepEqual(ids(one), made.slice(0, 1))
    })

    it('sends no Link when the last page is exactly full', async (t) => {
      const ta = await buildTestApp(t, { store })
      const made = await createMany(ta, 6)
      const p1 = await ta.app.inject({ url: '/v1/pets?limit=3', headers: ta.auth })
      const p2 = await ta.app.inject({ url: nextLink(p1)!, headers: ta.auth })
      assert.deepEqual([...ids(p1), ...ids(p2)], made)
      assert.equal(p2.headers.link, undefined)
      const all = await ta.app.inject({ url: '/v1/pets?limit=6', headers: ta.auth })
      assert.equal(all.headers.link, undefined)
    })

    it('filters by status and carries limit and status in the next link', async (t) => {
      const ta = await buildTestApp(t, { store })
      const statuses = ['available', 'pending', 'sold']
      const made = await createMany(ta, 12, i => statuses[i % 3]!)
      const rows = (await petsInDb(ta))
      const sold = rows.filter(r => r.status === 'sold').map(r => Number(r.id))
      assert.equal(sold.length, 4)
      assert.equal(made.length, 12)

      const p1 = await ta.app.inject({ url: '/v1/pets?status=sold&limit=3', headers: ta.auth })
      assert.ok(p1.json().every((p: { status: string }) => p.status === 'sold'))
      assert.deepEqual(ids(p1), sold.slice(0, 3))
      const link = nextLink(p1)!
      assert.match(link, /^\/v1\/pets\?limit=3&status=sold&cursor=[A-Za-z0-9_-]+$/)
      const p2 = await ta.app.inject({ url: link, headers: ta.auth })
      assert.deepEqual(ids(p2), sold.slice(3))
      assert.equal(p2.headers.link, undefined)

      const none = await ta.app.inject({ url: '/v1/pets?status=pending&limit=100', headers: ta.auth })
      assert.deepEqual(ids(none), rows.filter(r => r.status === 'pending').map(r => Number(r.id)))
    })

    it('visits every pet exactly once while pets are added between pages', async (t) => {
      const ta = await buildTestApp(t, { store })
      await createMany(ta, 10)
      const seen: number[] = []
      let url: string | undefined = '/v1/pets?limit=4'
      let page = 0
      while (url !== undefined) {
        const res: Response = await ta.app.inject({ url, headers: ta.auth })
        assert.equal(res.statusCode, 200)
        seen.push(...ids(res))
        url = nextLink(res)
        if (page++ < 4) await createMany(ta, 3)
      }
      const all = (await petsInDb(ta)).map(r => Number(r.id))
      assert.equal(all.length, 22)
      assert.deepEqual(seen, all)
    })

    it('refuses a cursor that is tampered with, foreign, or used with another filter', async (t) => {
      const ta = await buildTestApp(t, { store })
      await createMany(ta, 6, i => (i % 2 === 0 ? 'sold' : 'pending'))
      const plain = /cursor=([^&>]+)/.exec(nextLink(await ta.app.inject({ url: '/v1/pets?limit=1', headers: ta.auth }))!)![1]!
      const sold = /cursor=([^&>]+)/.exec(nextLink(await ta.app.inject({ url: '/v1/pets?limit=1&status=sold', headers: ta.auth }))!)![1]!
      const flip = (c: string, i: number) => c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1)
      const foreign = new CursorCodec(Buffer.alloc(32, 7)).encode(1n, undefined)
      const cases: Array<[string, string]> = [
        ['a flipped character in the id', `cursor=${flip(plain, 3)}`],
        ['a flipped character in the MAC', `cursor=${flip(plain, plain.length - 2)}`],
        ['a truncated cursor', `cursor=${plain.slice(0, -1)}`],
        ['garbage', 'cursor=not-a-cursor'],
        ['a cursor of another service', `cursor=${foreign}`],
        ['a status=sold cursor with no filter', `cursor=${sold}`],
        ['a status=sold cursor with status=pending', `status=pending&cursor=${sold}`],
        ['an unfiltered cursor with status=sold', `status=sold&cursor=${plain}`]
      ]
      for (const [label, qs] of cases) {
        await t.test(label, async () => {
          assertError(await ta.app.inject({ url: `/v1/pets?${qs}`, headers: ta.auth }), 400, 'invalid_parameter', BAD_CURSOR)
        })
      }
      // What the document says of a cursor (maxLength, pattern) is what an issued cursor is, and a
      // value outside it is refused by that rule.
      assert.equal(plain.length, CURSOR_MAX_LENGTH)
      assert.match(plain, new RegExp(CURSOR_PATTERN, 'u'))
      assertError(await ta.app.inject({ url: `/v1/pets?cursor=${plain}A`, headers: ta.auth }), 400, 'invalid_parameter', CURSOR_LENGTH_RULE)
      assertError(await ta.app.inject({ url: `/v1/pets?cursor=${plain.slice(0, -1)}.`, headers: ta.auth }), 400, 'invalid_parameter',
        "query parameter 'cursor' must be a cursor from the `Link: rel=\"next\"` header of a previous page (base64url characters)")
      // Each is accepted with its own filter, and a different limit is fine.
      assert.equal((await ta.app.inject({ url: `/v1/pets?cursor=${plain}&limit=50`, headers: ta.auth })).statusCode, 200)
      assert.equal((await ta.app.inject({ url: `/v1/pets?status=sold&cursor=${sold}`, headers: ta.auth })).statusCode, 200)
    })

    it('answers 400 naming the parameter for every malformed query', async (t) => {
      const ta = await buildTestApp(t, { store })
      await createMany(ta, 3)
      const cases: Array<[string, string]> = [
        ['limit=0', LIMIT_RULE],
        ['limit=101', LIMIT_RULE],
        ['limit=abc', LIMIT_RULE],
        ['limit=1.5', LIMIT_RULE],
        ['limit=', LIMIT_RULE],
        ['limit', LIMIT_RULE],
        ['limit=-1', LIMIT_RULE],
        ['limit=1e1', LIMIT_RULE],
        ['limit=%201', LIMIT_RULE],
        ['limit=1&limit=2', "query parameter 'limit' must be given at most once"],
        ['limit=5&limit=5', "query parameter 'limit' must be given at most once"],
        ['status=Available', QUERY_STATUS_RULE],
        ['status=SOLD', QUERY_STATUS_RULE],
        ['status=lost', QUERY_STATUS_RULE],
        ['status=', QUERY_STATUS_RULE],
        ['status=sold&status=sold', "query parameter 'status' must be given at most once"],
        ['status=sold&status=pending', "query parameter 'status' must be given at most once"],
        ['stauts=sold', "query parameter 'stauts' is not supported; supported parameters are limit, status, cursor"],
        ['Limit=5', "query parameter 'Limit' is not supported; supported parameters are limit, status, cursor"],
        ['limit=5&offset=10', "query parameter 'offset' is not supported; supported parameters are limit, status, cursor"],
        ['cursor=', CURSOR_LENGTH_RULE]
      ]
      for (const [qs, message] of cases) {
        await t.test(qs, async () => {
          assertError(await ta.app.inject({ url: `/v1/pets?${qs}`, headers: ta.auth }), 400, 'invalid_parameter', message)
        })
      }
    })
  })

  describe(`GET /v1/pets/{petId} (getPet, deprecated) [${store}]`, () => {
    const assertDeprecationHeaders = (res: Response, deprecation = DEPRECATION) => {
      assert.equal(res.headers.deprecation, deprecation)
      assert.equal(res.headers.sunset, SUNSET)
      assert.equal(res.headers.link, SUCCESSOR)
    }

    it('answers 200, 404, 400 and 401, each with Deprecation, Sunset and the successor Link', async (t) => {
      const ta = await buildTestApp(t, { store })
      const pet = await createPet(ta, { name: 'Rex', categoryId: 3, status: 'sold' })

      const ok = await ta.app.inject({ url: `/v1/pets/${pet.id}`, headers: ta.auth })
      assert.equal(ok.statusCode, 200)
      assert.deepEqual(ok.json(), pet)
      assertDeprecationHeaders(ok)

      for (const id of ['999999', INT64_MAX, INT64_MIN, '0', '-1']) {
        const res = await ta.app.inject({ url: `/v1/pets/${id}`, headers: ta.auth })
        assertError(res, 404, 'not_found', `no pet with id ${id}`)
        assertDeprecationHeaders(res)
      }

      for (const id of ['abc', '1.5', '9223372036854775808', '-9223372036854775809', '99999999999999999999', '+1', '1e3', '0x10', '%20', '1'.repeat(300), '007', '00', '-0']) {
        const res = await ta.app.inject({ url: `/v1/pets/${id}`, headers: ta.auth })
        assertError(res, 400, 'invalid_parameter', PET_ID_RULE)
        assertDeprecationHeaders(res)
      }

      const anonymous = await ta.app.inject({ url: `/v1/pets/${pet.id}` })
      assertError(anonymous, 401, 'unauthorized', 'missing bearer API key: send Authorization: Bearer <API_KEY>')
      assertDeprecationHeaders(anonymous)
    })

    it('answers 410 gone, naming the replacement, from the sunset instant on', async (t) => {
      let clock = SUNSET_MS - 1
      const ta = await buildTestApp(t, { store, now: () => clock })
      const pet = await createPet(ta, { name: 'Rex', categoryId: 3 })
      const GONE = `GET /v1/pets/{petId} was removed on ${SUNSET}; use GET /v1/pets with the status filter instead`

      const before = await ta.app.inject({ url: `/v1/pets/${pet.id}`, headers: ta.auth })
      assert.equal(before.statusCode, 200)
      assertDeprecationHeaders(before)

      for (const at of [SUNSET_MS, SUNSET_MS + 1, SUNSET_MS + 365 * 86400_000]) {
        clock = at
        for (const id of [String(pet.id), '999999', 'abc']) {
          const res = await ta.app.inject({ url: `/v1/pets/${id}`, headers: ta.auth })
          assertError(res, 410, 'gone', GONE)
          assertDeprecationHeaders(res)
        }
        // Authentication still comes first.
        assertError(await ta.app.inject({ url: `/v1/pets/${pet.id}` }), 401, 'unauthorized', 'missing bearer API key: send Authorization: Bearer <API_KEY>')
        // The successor keeps working.
        const list = await ta.app.inject({ url: '/v1/pets?status=available', headers: ta.auth })
        assert.deepEqual(list.json(), [pet])
        assert.equal((await postPet(ta, '{"name":"later","categoryId":1,"status":"pending"}')).statusCode, 201)
      }
    })
  })
}
