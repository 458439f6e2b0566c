import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import { strongEtag } from '../plugins/etag.js'
import type { Metrics } from '../plugins/metrics.js'
import { ErrorSchema } from '../schemas/common.js'
import {
  ListPetsQuerySchema, NewPetSchema, PetIdParamsSchema, PetSchema, PetsSchema,
  validateListPetsQuery, validateNewPet, validatePetIdParams,
  type ListPetsQuery, type NewPet, type PetIdParams
} from '../schemas/pets.js'
import type { CursorCodec } from '../services/cursor.js'
import type { Store } from '../store/store.js'

export interface PetRoutesOptions {
  store: Store
  cursors: CursorCodec
  getPetDeprecatedAt: Date
  getPetSunsetAt: Date
  /** The clock, injectable so tests can move past the sunset. */
  now: () => number
  metrics: Metrics
  /** How long an Idempotency-Key is remembered (at least 24 h). */
  idempotencyTtlMs: number
}

// The IETF draft makes the value an sf-string ("…"); Stripe sends it bare. Both are accepted.
const IDEMPOTENCY_KEY = /^"?([\x21\x23-\x7e]{1,255})"?$/

function idempotencyKeyOf (request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key']
  if (raw === undefined) return undefined
  const m = typeof raw === 'string' && raw.startsWith('"') === raw.endsWith('"') ? IDEMPOTENCY_KEY.exec(raw) : null
  if (m === null) {
    throw new ApiError('invalid_parameter', "header 'Idempotency-Key' must be sent once, 1 to 255 printable ASCII characters without spaces or quotes (optionally in double quotes)")
  }
  return m[1]!
}

/** What makes two creates "the same request": the validated body, defaults applied (key order and spacing do not matter). */
function fingerprint (pet: NewPet): string {
  return createHash('sha256').update(JSON.stringify([pet.name, String(pet.categoryId), pet.status])).digest('hex')
}

const E = ErrorSchema
// Our own validators (see schemas/pets.ts); the schemas above still document each part.
const validators = {
  body: () => (data: unknown) => ({ value: validateNewPet(data) }),
  querystring: () => (data: unknown) => ({ value: validateListPetsQuery(data) }),
  params: () => (data: unknown) => ({ value: validatePetIdParams(data) })
}
function validatorCompiler ({ httpPart }: { httpPart?: string }) {
  const make = validators[httpPart as keyof typeof validators]
  const check = make()
  return (data: unknown) => {
    try {
      return check(data)
    } catch (error) {
      return { error: error as Error }
    }
  }
}

/** The three operations of the Petstore v1 interface. Authentication is installed by the /v1 scope. */
export default async function petRoutes (app: FastifyInstance, opts: PetRoutesOptions): Promise<void> {
  const { store, cursors, metrics } = opts
  // Idempotency-Keys (scoped by API key) of creates still running in this process: duplicates get 409.
  const inFlight = new Set<string>()

  app.get('/pets', {
    validatorCompiler,
    schema: {
      operationId: 'listPets',
      summary: 'List animals',
      description: 'A page of animals in ascending id order. When more follow, the `Link` header carries `rel="next"` with the URL of the next page (limit and status kept, plus an opaque cursor).',
      tags: ['pets'],
      querystring: ListPetsQuerySchema,
      response: { 200: PetsSchema, 400: E, 401: E, 429: E, 503: E }
    },
    onSend: strongEtag
  }, async (request: FastifyRequest, reply: FastifyReply) => {
    const q = request.query as ListPetsQuery
    let afterId: bigint | null = null
    if (q.cursor !== undefined) {
      const decoded = cursors.decode(q.cursor, q.status)
      if (decoded === undefined) throw new ApiError('invalid_parameter', "query parameter 'cursor' is not a cursor this service issued for this status filter")
      afterId = decoded
    }
    const pets = await store.listPets({ afterId, limit: q.limit + 1, status: q.status })
    if (pets.length > q.limit) {
      pets.length = q.limit
      const cursor = cursors.encode(pets[pets.length - 1]!.id, q.status)
      const status = q.status === undefined ? '' : `&status=${q.status}`
      reply.header('link', `</v1/pets?limit=${q.limit}${status}&cursor=${cursor}>; rel="next"`)
    }
    return pets
  })

  app.post('/pets', {
    validatorCompiler,
    schema: {
      operationId: 'createPet',
      summary: 'Add an animal',
      description: 'Stores the animal durably and answers 201 with it, its assigned id and `Location`. `status` defaults to `available`. ' +
        'With an `Idempotency-Key` header, a retry with the same key and body answers the original 201 (and `Idempotent-Replayed: true`) without creating anything; ' +
        'the same key with another body is 422, and while the first request is still running, 409.',
      tags: ['pets'],
      body: NewPetSchema,
      response: { 201: PetSchema, 400: E, 401: E, 409: E, 413: E, 415: E, 422: E, 429: E, 503: E }
    }
  }, async (request: FastifyRequest, reply: FastifyReply) => {
    const body = request.body as NewPet
    const key = idempotencyKeyOf(request)
    if (key === undefined) {
      const pet = await store.createPet(body)
      reply.code(201).header('location', `/v1/pets/${pet.id}`)
      return pet
    }
    const scoped = `${request.apiKeyId}:${key}`
    if (inFlight.has(scoped)) throw new ApiError('idempotency_key_in_use', 'a request with this Idempotency-Key is still being processed; retry once it has finished')
    inFlight.add(scoped)
    try {
      const now = opts.now()
      const r = await store.createPetIdempotent(body, {
        apiKeyId: request.apiKeyId,
        key,
        fingerprint: fingerprint(body),
        now: new Date(now),
        expiredBefore: new Date(now - opts.idempotencyTtlMs)
      })
      if (r.outcome === 'mismatch') throw new ApiError('idempotency_key_reused', 'this Idempotency-Key was already used with a different request body; use a new key for a new request')
      if (r.outcome === 'replayed') reply.header('idempotent-replayed', 'true')
      reply.code(201).header('location', `/v1/pets/${r.pet.id}`)
      return r.pet
    } finally {
      inFlight.delete(scoped)
    }
  })

  const deprecation = `@${Math.floor(opts.getPetDeprecatedAt.getTime() / 1000)}`
  const sunset = opts.getPetSunsetAt.toUTCString()
  app.get('/pets/:petId', {
    validatorCompiler,
    schema: {
      operationId: 'getPet',
      summary: 'Get an animal (deprecated)',
      description: `Deprecated: removed on ${sunset}; from then on it answers 410. Use GET /v1/pets with the status filter instead. Every response carries Deprecation, Sunset and a Link to the successor.`,
      deprecated: true,
      tags: ['pets'],
      params: PetIdParamsSchema,
      response: { 200: PetSchema, 400: E, 401: E, 404: E, 410: E, 429: E, 503: E }
    },
    // Runs for every response of this operation, errors (401 included) too.
    onSend: [async (_request, reply) => {
      reply.header('deprecation', deprecation)
      reply.header('sunset', sunset)
      reply.header('link', '</v1/pets>; rel="successor-version"')
    }, strongEtag],
    onRequest: async (request) => {
      // After authentication (scope hook): who still calls the deprecated operation, 410s included.
      metrics.getPetCalls.inc({ key_id: String(request.apiKeyId) })
      if (opts.now() >= opts.getPetSunsetAt.getTime()) {
        throw new ApiError('gone', `GET /v1/pets/{petId} was removed on ${sunset}; use GET /v1/pets with the status filter instead`)
      }
    }
  }, async (request: FastifyRequest) => {
    const { petId } = request.params as PetIdParams
    const pet = await store.getPet(petId)
    if (pet === undefined) throw new ApiError('not_found', `no pet with id ${petId}`)
    return pet
  })
}
