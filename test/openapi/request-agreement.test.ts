import assert from 'node:assert/strict'
import { isDeepStrictEqual } from 'node:util'
import { describe, it } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import fc from 'fast-check'
import { parseJsonBody } from '../../src/http/json-body.js'
import { createRequestAjv, withInt64 } from '../../src/schemas/ajv.js'
import { STORES, buildTestApp, type TestApp } from '../helpers/app.js'
import { fcParams, parseExact } from '../helpers/property.js'

/*
 * The server and a client validating against the served /openapi.json must reach the same verdict
 * on every request: valid by the document ⇔ 2xx from the server. Bodies of createPet are generated
 * around every rule's edge (Unicode names, int64 and non-integer numbers in every spelling, status
 * values and types, missing, extra, duplicated and client-sent id fields) and each is judged three
 * ways: by the server (app.inject); by Ajv 2020 over the document's requestBody schema, fed the body
 * parsed exactly (the service's lossless parser, and createRequestAjv's int64 rule so that integers
 * past 2^53 are judged by their exact value); and, when JSON.parse reads the body exactly, by a
 * stock Ajv 2020 + ajv-formats over the same schema. A table of bodies whose verdict is known by
 * hand pins the three to the right answer, not merely to each other. Query and path parameters of
 * listPets and getPet, and createPet's Idempotency-Key header, get the same treatment, for values a
 * client would send.
 */

type Json = Record<string, any>
const RUNS = Number(process.env.FC_RUNS ?? 300)
const INT64_MAX = 2n ** 63n - 1n
const INT64_MIN = -(2n ** 63n)
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020

const deref = (doc: Json, s: Json): Json =>
  typeof s.$ref === 'string' ? s.$ref.split('/').slice(1).reduce((n: Json, p: string) => n[p], doc) : s

/** The three judges of a createPet body; each answers "valid". */
function bodyJudges (doc: Json) {
  const schema = deref(doc, doc.paths['/pets'].post.requestBody.content['application/json'].schema)
  const exact = createRequestAjv().compile(withInt64(schema))
  const stock = addFormats(new Ajv2020()).compile(schema)
  return {
    exact: (text: string): boolean => exact(parseJsonBody(Buffer.from(text))),
    /** undefined when JSON.parse would round a number of this body (then a stock client cannot judge it). */
    stock: (text: string): boolean | undefined => {
      const plain: unknown = JSON.parse(text)
      return isDeepStrictEqual(plain, parseJsonBody(Buffer.from(text))) ? stock(plain) : undefined
    }
  }
}

// --- createPet bodies, as JSON text -----------------------------------------------------------

const nameEdges = [
  '', ' ', '\t\n\r', '\u00a0', '\u2003\u3000', '\u0000', 'a\u0000b', 'Rex', ' x ', '\u0301', 'e\u0301', 'e\u0301'.repeat(127), 'e\u0301'.repeat(128),
  '\ud800', '\udfff', 'x\udc00', '\udc00\ud800', 'Rex\ud83d', '\ud83d\udc36', '\ud83d\udc36'.repeat(255), '\ud83d\udc36'.repeat(256),
  'a'.repeat(255), 'a'.repeat(256), ' '.repeat(254) + 'x', ' '.repeat(255) + 'x', 'é'.repeat(255), '\ufeff', '\u200b', '\u2028', '"\\</script>'
]
const nameChar = fc.constantFrom(' ', '\t', 'a', 'Z', '0', '\u0000', '\u00a0', '\u0301', '\u3000', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\udc36', 'é', '\u{10FFFF}')
const name = fc.oneof(
  fc.constantFrom(...nameEdges),
  fc.string({ unit: nameChar, maxLength: 8 }),
  fc.string({ unit: nameChar, minLength: 250, maxLength: 260 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme-composite', minLength: 120, maxLength: 140 })
).map(s => JSON.stringify(s))

const categoryEdges = [
  '0', '-0', '7', '-7', '1e3', '1E3', '1e+3', '1.0', '10e-1', '100e-2', '0.1e1', '1.5', '1e-1', '-0.0', '1e-400', '1e400', '-1e400',
  '9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740993', '9007199254740993.5', '1.0000000000000001', '12345678.000000001',
  String(INT64_MAX), String(INT64_MIN), String(INT64_MAX + 1n), String(INT64_MIN - 1n), `${INT64_MAX}.0`, `${INT64_MAX}.5`,
  '9.2e18', '9.223372036854775807e18', '9.223372036854775808e18', '-9.223372036854775808e18', '1e19', '92233720368547758070e-1', '18446744073709551616',
  '"7"', '"9223372036854775807"', 'null', 'true', 'false', '[]', '[1]', '{}', '""'
]
const categoryId = fc.oneof(
  fc.constantFrom(...categoryEdges),
  fc.bigInt({ min: INT64_MIN - 10n, max: INT64_MAX + 10n }).map(String),
  fc.constantFrom(INT64_MIN, INT64_MAX, 2n ** 53n).chain(edge => fc.bigInt({ min: -3n, max: 3n }).map(d => String(edge + d))),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(d => JSON.stringify(d)),
  fc.tuple(fc.integer({ min: -99999, max: 99999 }), fc.integer({ min: -25, max: 25 })).map(([m, e]) => `${m}e${e}`),
  fc.tuple(fc.bigInt({ min: -(10n ** 19n), max: 10n ** 19n }), fc.integer({ min: 0, max: 3 })).map(([m, z]) => `${m}.${'0'.repeat(z + 1)}`)
)

const statusEdges = ['"available"', '"pending"', '"sold"', '"Available"', '"SOLD"', '"lost"', '""', '"available "', 'null', '1', 'true', '[]', '{}', '["sold"]']
const status = fc.oneof(fc.constantFrom(...statusEdges), fc.string({ maxLength: 10 }).map(s => JSON.stringify(s)))

const extraField = fc.oneof(
  fc.constantFrom('id', 'ID', 'Id', 'Name', 'category_id', 'tags', 'extra', 'status ', ''),
  fc.string({ maxLength: 6 })
).chain(k => fc.constantFrom('1', 'null', '"x"', '9223372036854775807', '{}').map(v => `${JSON.stringify(k)}:${v}`))

interface BodyParts { name?: string, categoryId?: string, status?: string, extra?: string, duplicate?: string }

const bodyParts: fc.Arbitrary<BodyParts> = fc.record({
  name: fc.option(name, { nil: undefined, freq: 12 }),
  categoryId: fc.option(categoryId, { nil: undefined, freq: 12 }),
  status: fc.option(status, { nil: undefined, freq: 2 }),
  extra: fc.option(extraField, { nil: undefined, freq: 6 }),
  // The same key twice: every JSON reader used here keeps the last value.
  duplicate: fc.option(fc.constantFrom('"name":"dup"', '"categoryId":1', '"categoryId":12345678901234567890', '"status":"sold"', '"name":""'), { nil: undefined, freq: 10 })
}, { requiredKeys: [] })

const bodyText = (parts: BodyParts): fc.Arbitrary<string> => {
  const fields: string[] = []
  if (parts.name !== undefined) fields.push(`"name":${parts.name}`)
  if (parts.categoryId !== undefined) fields.push(`"categoryId":${parts.categoryId}`)
  if (parts.status !== undefined) fields.push(`"status":${parts.status}`)
  if (parts.extra !== undefined) fields.push(parts.extra)
  return fc.shuffledSubarray(fields, { minLength: fields.length }).map(order => `{${[...order, ...(parts.duplicate !== undefined ? [parts.duplicate] : [])].join(',')}}`)
}

const body = fc.oneof(
  { weight: 20, arbitrary: bodyParts.chain(bodyText) },
  { weight: 1, arbitrary: fc.constantFrom('null', '[]', '[{"name":"a","categoryId":1}]', '"Rex"', '7', 'true', '{}') }
)

/** Bodies whose verdict is known by hand: the three judges must each give it. */
const KNOWN: Array<[string, boolean]> = [
  ['{"name":"Rex","categoryId":1}', true],
  ['{"name":"Rex","categoryId":1,"status":"sold"}', true],
  [`{"name":"Rex","categoryId":${INT64_MAX}}`, true],
  [`{"name":"Rex","categoryId":${INT64_MIN}}`, true],
  [`{"name":"Rex","categoryId":${INT64_MAX + 1n}}`, false],
  [`{"name":"Rex","categoryId":${INT64_MIN - 1n}}`, false],
  ['{"name":"Rex","categoryId":1e3}', true],
  ['{"name":"Rex","categoryId":1.0}', true],
  ['{"name":"Rex","categoryId":9.2e18}', true],
  ['{"name":"Rex","categoryId":9.223372036854775807e18}', true],
  ['{"name":"Rex","categoryId":9.223372036854775808e18}', false],
  ['{"name":"Rex","categoryId":1e19}', false],
  ['{"name":"Rex","categoryId":1.5}', false],
  ['{"name":"Rex","categoryId":1.0000000000000001}', false],
  ['{"name":"Rex","categoryId":12345678.000000001}', false],
  ['{"name":"Rex","categoryId":9007199254740993.5}', false],
  ['{"name":"Rex","categoryId":1e-400}', false],
  ['{"name":"Rex","categoryId":1e400}', false],
  ['{"name":"Rex","categoryId":"7"}', false],
  ['{"name":"Rex","categoryId":null}', false],
  ['{"name":"","categoryId":1}', false],
  ['{"name":" \\t","categoryId":1}', false],
  ['{"name":"\\u0000","categoryId":1}', true],
  ['{"name":"\\ud83d\\udc36","categoryId":1}', true],
  ['{"name":"\\ud83d","categoryId":1}', false],
  ['{"name":"\\udc36\\ud83d","categoryId":1}', false],
  ['{"name":"e\\u0301","categoryId":1}', true],
  [JSON.stringify({ name: '\u{1F436}'.repeat(255), categoryId: 1 }), true],
  [JSON.stringify({ name: '\u{1F436}'.repeat(256), categoryId: 1 }), false],
  ['{"name":"Rex","categoryId":1,"status":"Sold"}', false],
  ['{"name":"Rex","categoryId":1,"status":null}', false],
  ['{"name":"Rex"}', false],
  ['{"categoryId":1}', false],
  ['{"id":1,"name":"Rex","categoryId":1}', false],
  ['{"name":"Rex","categoryId":1,"color":"red"}', false],
  ['{"name":"Rex","name":"Max","categoryId":12345678901234567}', true],
  ['{"name":"Rex","categoryId":1,"categoryId":"x"}', false],
  ['[]', false],
  ['null', false]
]

async function serverVerdict (ta: TestApp, text: string): Promise<boolean> {
  const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload: text })
  if (res.statusCode === 201) {
    // Accepted means stored as sent: exact categoryId, status defaulted once.
    const sent = parseJsonBody(Buffer.from(text)) as Json
    const pet = parseExact(res.body) as Json
    assert.equal(pet.name, sent.name)
    assert.equal(BigInt(pet.categoryId), BigInt(sent.categoryId))
    assert.equal(pet.status, sent.status ?? 'available')
    return true
  }
  assert.equal(res.statusCode, 400, `${text}: ${res.body}`)
  const error = res.json()
  assert.equal(error.code, 'validation_failed', `${text}: ${res.body}`)
  assert.match(error.message, /^(body field '.*' |body field with an empty name |request body must be a JSON object)/s, `${text}: the message names no field`)
  return false
}

for (const store of STORES) {
  describe(`the server and Ajv over /openapi.json agree on every request [${store}]`, () => {
    it('createPet bodies: valid by the document ⇔ 201', async (t) => {
      const ta = await buildTestApp(t, { store })
      const doc = JSON.parse((await ta.app.inject({ url: '/openapi.json' })).body)
      const judge = bodyJudges(doc)
      const seen = { accepted: 0, refused: 0, stock: 0 }
      const check = async (text: string, expected?: boolean): Promise<void> => {
        const exact = judge.exact(text)
        const stock = judge.stock(text)
        const server = await serverVerdict(ta, text)
        assert.equal(server, exact, `${text}: server ${server ? 'accepts' : 'refuses'}, Ajv over the document ${exact ? 'accepts' : 'refuses'}`)
        if (stock !== undefined) {
          assert.equal(server, stock, `${text}: server ${server ? 'accepts' : 'refuses'}, stock Ajv over the document ${stock ? 'accepts' : 'refuses'}`)
          seen.stock++
        }
        if (expected !== undefined) assert.equal(server, expected, `${text}: expected ${expected ? 'valid' : 'invalid'}`)
        seen[server ? 'accepted' : 'refused']++
      }
      for (const [text, expected] of KNOWN) await check(text, expected)
      for (const n of nameEdges) await check(`{"name":${JSON.stringify(n)},"categoryId":1}`)
      for (const c of categoryEdges) await check(`{"name":"Rex","categoryId":${c}}`)
      for (const s of statusEdges) await check(`{"name":"Rex","categoryId":1,"status":${s}}`)
      await fc.assert(fc.asyncProperty(body, async (text) => { await check(text) }), fcParams(store === 'sqlite' ? RUNS : Math.ceil(RUNS / 3)))
      assert.ok(seen.accepted > 20 && seen.refused > 20, `too one-sided to mean much: ${JSON.stringify(seen)}`)
      t.diagnostic(`${store}: ${seen.accepted + seen.refused} bodies, ${seen.accepted} accepted and ${seen.refused} refused by both the server and Ajv over the document (${seen.stock} also by stock Ajv + JSON.parse)`)
    })

    it('listPets query and getPet path: valid by the document ⇔ not 400', async (t) => {
      const ta = await buildTestApp(t, { store })
      const doc = JSON.parse((await ta.app.inject({ url: '/openapi.json' })).body)
      // A parameter's schema, less its `default` (what the server fills in when it is absent, never checked).
      const param = (path: string, name: string): Json => {
        const { default: _absent, ...schema } = (doc.paths[path].get.parameters as Json[]).find(p => p.name === name)!.schema
        return schema
      }
      const ajv = createRequestAjv()
      const limitValid = ajv.compile(withInt64(param('/pets', 'limit')))
      const statusValid = ajv.compile(withInt64(param('/pets', 'status')))
      const petIdValid = ajv.compile(withInt64(param('/pets/{petId}', 'petId')))
      let n = 0
      const integer = fc.oneof(
        fc.integer({ min: -5, max: 110 }).map(BigInt),
        fc.bigInt({ min: INT64_MIN - 5n, max: INT64_MAX + 5n }),
        fc.constantFrom(INT64_MIN, INT64_MAX, INT64_MIN - 1n, INT64_MAX + 1n, 0n, 2n ** 64n)
      )
      await fc.assert(fc.asyncProperty(integer, fc.string({ maxLength: 10 }), async (v, s) => {
        // What a client sends for a value: its decimal spelling (OpenAPI's form and simple styles).
        const list = await ta.app.inject({ url: `/v1/pets?limit=${v}`, headers: ta.auth })
        // limit is a plain integer: a client holds it as a number.
        assert.equal(list.statusCode !== 400, limitValid(Number(v)), `limit=${v}: ${list.body}`)
        const get = await ta.app.inject({ url: `/v1/pets/${v}`, headers: ta.auth })
        assert.equal(get.statusCode !== 400, petIdValid(v), `petId ${v}: ${get.body}`)
        const filtered = await ta.app.inject({ url: `/v1/pets?status=${encodeURIComponent(s)}`, headers: ta.auth })
        assert.equal(filtered.statusCode !== 400, statusValid(s), `status=${s}: ${filtered.body}`)
        n++
      }), fcParams(store === 'sqlite' ? RUNS : Math.ceil(RUNS / 3)))
      for (const enumValue of ['available', 'pending', 'sold']) {
        assert.equal((await ta.app.inject({ url: `/v1/pets?status=${enumValue}`, headers: ta.auth })).statusCode, 200)
      }
      t.diagnostic(`${store}: ${n} values each as limit, petId and status: server and document agree`)
    })

    it('createPet Idempotency-Key header: valid by the document ⇔ not 400', async (t) => {
      const ta = await buildTestApp(t, { store })
      const doc = JSON.parse((await ta.app.inject({ url: '/openapi.json' })).body)
      const header = (doc.paths['/pets'].post.parameters as Json[]).find(p => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')!
      const valid = addFormats(new Ajv2020()).compile(header.schema)
      // Characters a header value can carry; no white space at either end, which HTTP strips before any server sees it.
      const char = fc.constantFrom('a', 'Z', '0', '-', '_', '.', '!', '~', '#', '"', ' ', '\t', ',', "'", '\\')
      const value = fc.oneof(
        fc.string({ unit: char, maxLength: 8 }),
        fc.constantFrom('x'.repeat(255), 'x'.repeat(256), `"${'x'.repeat(255)}"`, `"${'x'.repeat(256)}"`, '""', '"a', 'a"', '"a"', 'a"b', 'a, b')
      ).filter(v => v === v.trim())
      let n = 0
      await fc.assert(fc.asyncProperty(value, async (v) => {
        const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json', 'idempotency-key': v }, payload: '{"name":"Rex","categoryId":1}' })
        assert.equal(res.statusCode !== 400, valid(v), `Idempotency-Key ${JSON.stringify(v)}: ${res.statusCode} ${res.body}`)
        if (res.statusCode === 400) assert.equal(res.json().message, "header 'Idempotency-Key' must be sent once, 1 to 255 printable ASCII characters without spaces or quotes (optionally in double quotes)")
        n++
      }), fcParams(store === 'sqlite' ? Math.ceil(RUNS / 2) : Math.ceil(RUNS / 6)))
      t.diagnostic(`${store}: ${n} Idempotency-Key values: server and document agree`)
    })

    it('an integer in a path or a query has one spelling: 007, -0, +7 and 7.0 are refused alike', async (t) => {
      const ta = await buildTestApp(t, { store })
      for (const spelling of ['007', '00', '-0', '+7', '7.0', '1e1', ' 7', '7 ', '0x7', '']) {
        const list = await ta.app.inject({ url: `/v1/pets?limit=${encodeURIComponent(spelling)}`, headers: ta.auth })
        assert.equal(list.statusCode, 400, `limit=${spelling}`)
        assert.deepEqual(list.json(), { code: 'invalid_parameter', message: "query parameter 'limit' must be an integer from 1 to 100", status: 400 })
        if (spelling === '') continue
        const get = await ta.app.inject({ url: `/v1/pets/${encodeURIComponent(spelling)}`, headers: ta.auth })
        assert.equal(get.statusCode, 400, `petId ${spelling}`)
        assert.deepEqual(get.json(), { code: 'invalid_parameter', message: `path parameter 'petId' must be an integer from ${INT64_MIN} to ${INT64_MAX}`, status: 400 })
      }
      assert.equal((await ta.app.inject({ url: '/v1/pets?limit=7', headers: ta.auth })).statusCode, 200)
      assert.equal((await ta.app.inject({ url: '/v1/pets/7', headers: ta.auth })).statusCode, 404)
      assert.equal((await ta.app.inject({ url: '/v1/pets/0', headers: ta.auth })).statusCode, 404)
      assert.equal((await ta.app.inject({ url: '/v1/pets/-7', headers: ta.auth })).statusCode, 404)
    })
  })
}
