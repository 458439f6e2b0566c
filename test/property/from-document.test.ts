import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import fc from 'fast-check'
import { generateSync } from 'json-schema-faker'
import { DECIMAL_INTEGER } from '../../src/schemas/validator.js'
import { buildTestApp } from '../helpers/app.js'
import { fcParams } from '../helpers/property.js'

/*
 * Requests made from the served /openapi.json by a generator of the JSON Schema ecosystem, judged
 * by a validator of the ecosystem, answered by the server: the three must agree. json-schema-faker
 * (JSON Schema 2020-12, seeded) makes createPet bodies and listPets queries valid by the document;
 * fast-check picks the seed and, for about half the cases, one change that may break the value (a
 * required field dropped, an unknown one added, a value of another type or out of range). Stock
 * Ajv 2020 with ajv-formats over the same document gives the verdict: valid → 2xx, invalid → 400
 * in the Error shape. A document a generator cannot read (a pattern outside the interoperable
 * regular-expression subset, a keyword it does not know) fails here.
 */

type Json = Record<string, any>
const RUNS = Number(process.env.FC_RUNS ?? 200)
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020

const deref = (doc: Json, s: Json): Json =>
  typeof s.$ref === 'string' ? s.$ref.split('/').slice(1).reduce((n: Json, p: string) => n[p], doc) : s

/**
 * A JSON value of any type, for a field that should not have it. Numbers stay within ±1e6: past
 * 2^53 a JavaScript validator reads `format: int64` as "an integer" only (its range is the
 * service's exact int64 rule, checked by test/openapi/request-agreement.test.ts).
 */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null), fc.boolean(), fc.integer(), fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.string({ maxLength: 5 }),
  fc.constantFrom('', ' ', '\t\n', '\ud83d', 'x\udc36', 'a'.repeat(256), [], {}, [1], { a: 1 })
)
/** Names a client might put where they do not belong. */
const strayName = fc.constantFrom('id', 'color', 'toString', 'constructor', '', 'Name', 'status ')

type Change = (value: Json, properties: string[]) => Json
const changes = (valueFor: fc.Arbitrary<unknown>): fc.Arbitrary<Change> => fc.oneof(
  fc.nat().map((i): Change => (v, props) => { const out = { ...v }; delete out[props[i % props.length]!]; return out }),
  fc.tuple(strayName, valueFor).map(([k, x]): Change => (v) => ({ ...v, [k]: x })),
  fc.tuple(fc.nat(), valueFor).map(([i, x]): Change => (v, props) => ({ ...v, [props[i % props.length]!]: x }))
)

describe('requests generated from the served document (json-schema-faker) get the verdict of the document (stock Ajv)', () => {
  it('createPet: valid body → 201, invalid → 400 validation_failed', async (t) => {
    const ta = await buildTestApp(t)
    const doc = JSON.parse((await ta.app.inject({ url: '/openapi.json' })).body) as Json
    const schema = deref(doc, doc.paths['/pets'].post.requestBody.content['application/json'].schema)
    const valid = addFormats(new Ajv2020()).compile(schema)
    const props = Object.keys(schema.properties as Json)
    const seen = { accepted: 0, refused: 0 }
    await fc.assert(fc.asyncProperty(fc.nat(), fc.option(changes(anyJson), { nil: undefined }), async (seed, change) => {
      const generated = generateSync(schema, { seed: seed + 1 }) as Json
      assert.equal(valid(generated), true, `json-schema-faker made a body the document refuses: ${JSON.stringify(generated)}`)
      const body = change === undefined ? generated : change(generated, props)
      const expected = valid(body)
      const text = JSON.stringify(body)
      const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' }, payload: text })
      if (expected) {
        assert.equal(res.statusCode, 201, `${text}: valid by the document, answered ${res.statusCode} ${res.body}`)
        assert.equal(res.json().name, body.name)
      } else {
        assert.equal(res.statusCode, 400, `${text}: invalid by the document, answered ${res.statusCode} ${res.body}`)
        assert.equal(res.json().code, 'validation_failed', text)
      }
      seen[expected ? 'accepted' : 'refused']++
    }), fcParams(RUNS))
    assert.ok(seen.accepted > RUNS / 5 && seen.refused > RUNS / 5, `too one-sided: ${JSON.stringify(seen)}`)
    t.diagnostic(`${seen.accepted} generated bodies accepted, ${seen.refused} changed ones refused, each as the document says`)
  })

  it('listPets: valid query → 200, invalid → 400 invalid_parameter', async (t) => {
    const ta = await buildTestApp(t)
    const doc = JSON.parse((await ta.app.inject({ url: '/openapi.json' })).body) as Json
    // The query as one object schema. The cursor is left out: it is opaque (only one the service
    // issued is a cursor), so no schema can tell a valid one, and the server refuses a made-up one.
    const params = (doc.paths['/pets'].get.parameters as Json[]).filter(p => p.in === 'query' && p.name !== 'cursor')
    const schema = { type: 'object', properties: Object.fromEntries(params.map(p => [p.name, p.schema])), additionalProperties: false }
    const valid = addFormats(new Ajv2020()).compile(schema)
    const props = Object.keys(schema.properties)
    // A query value is text: a client writes numbers in decimal, strings as they are. A string that
    // spells an integer is left out: as text it is that integer, which Ajv (judging the JSON value) would call a string.
    const queryValue = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }), fc.double({ min: -200, max: 200, noNaN: true, noDefaultInfinity: true }),
      fc.string({ maxLength: 8 }).filter(s => !DECIMAL_INTEGER.test(s)), fc.constantFrom('available', 'sold', 'pending', 'Available')
    )
    const seen = { accepted: 0, refused: 0 }
    await fc.assert(fc.asyncProperty(fc.nat(), fc.option(changes(queryValue), { nil: undefined }), async (seed, change) => {
      const generated = generateSync(schema, { seed: seed + 1 }) as Json
      assert.equal(valid(generated), true, `json-schema-faker made a query the document refuses: ${JSON.stringify(generated)}`)
      const query = change === undefined ? generated : change(generated, props)
      // -0 is written 0 by every client; Ajv judges the number, the server the text.
      const text = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()
      const expected = valid(query)
      const res = await ta.app.inject({ url: `/v1/pets${text === '' ? '' : `?${text}`}`, headers: ta.auth })
      if (expected) assert.equal(res.statusCode, 200, `?${text}: valid by the document, answered ${res.statusCode} ${res.body}`)
      else {
        assert.equal(res.statusCode, 400, `?${text}: invalid by the document, answered ${res.statusCode} ${res.body}`)
        assert.equal(res.json().code, 'invalid_parameter', text)
      }
      seen[expected ? 'accepted' : 'refused']++
    }), fcParams(RUNS))
    assert.ok(seen.accepted > RUNS / 5 && seen.refused > RUNS / 5, `too one-sided: ${JSON.stringify(seen)}`)
    t.diagnostic(`${seen.accepted} generated queries accepted, ${seen.refused} changed ones refused, each as the document says`)
  })
})
