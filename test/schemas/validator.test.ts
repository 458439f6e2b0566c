import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { TSchema } from 'typebox'
import { ApiError } from '../../src/errors.js'
import { SHARED_SCHEMAS } from '../../src/schemas/index.js'
import { Ref } from '../../src/schemas/common.js'
import { INT64_MAX } from '../../src/schemas/int64.js'
import { ListPetsQuerySchema, NewPetSchema, PetIdParamsSchema } from '../../src/schemas/pets.js'
import { createValidatorCompiler } from '../../src/schemas/validator.js'

type Outcome = { value?: unknown, error?: Error }

/** A request part's validator, as Fastify compiles it for a route. */
function validator (schema: TSchema, httpPart: string): (data: unknown) => Outcome {
  const compile = createValidatorCompiler(SHARED_SCHEMAS)
  return compile({ schema, httpPart, method: 'POST', url: '/v1/pets' }) as (data: unknown) => Outcome
}

const refused = (outcome: Outcome): ApiError => {
  assert.ok(outcome.error instanceof ApiError, `not refused: ${JSON.stringify(outcome, (_k, v: unknown) => typeof v === 'bigint' ? String(v) : v)}`)
  return outcome.error
}

describe('the request validator (schemas/validator.ts)', () => {
  // As the route declares it: a reference to the shared schema.
  const body = validator(Ref(NewPetSchema), 'body')

  it('takes a body with an int64 past 2^53 exactly and fills the default status', () => {
    const out = body({ name: 'Rex', categoryId: 9007199254740993n })
    assert.equal(out.error, undefined)
    assert.deepEqual(out.value, { name: 'Rex', categoryId: 9007199254740993n, status: 'available' })
  })

  it('coerces nothing in a body and refuses every unknown field and a client-sent id, each named in details', () => {
    const e = refused(body({ name: 'Rex', categoryId: '7', colour: 'red', id: 3 }))
    assert.equal(e.code, 'validation_failed')
    const fields = e.details?.map(d => d.field).sort()
    assert.deepEqual(fields, ['categoryId', 'colour', 'id'])
  })

  it('refuses an int64 out of range and a blank name', () => {
    assert.equal(refused(body({ name: 'Rex', categoryId: INT64_MAX + 1n })).code, 'validation_failed')
    assert.equal(refused(body({ name: '   ', categoryId: 1n })).details?.[0]?.field, 'name')
  })

  it('reads a query integer in one spelling only: 7, never 007, +7 or 7.0; an int64 path parameter exactly', () => {
    const query = validator(ListPetsQuerySchema, 'querystring')
    assert.deepEqual(query({ limit: '7' }).value, { limit: 7 })
    for (const limit of ['007', '+7', '7.0', ' 7', '']) assert.equal(refused(query({ limit })).code, 'invalid_parameter', limit)
    const params = validator(PetIdParamsSchema, 'params')
    assert.deepEqual(params({ petId: '9223372036854775807' }).value, { petId: INT64_MAX })
    assert.equal(refused(params({ petId: '-0' })).code, 'invalid_parameter')
  })
})
