import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
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
  const { store, cursors } = opts

  app.get('/pets', {
    validatorCompiler,
    schema: {
      operationId: 'listPets',
      summary: 'List animals',
      description: 'A page of animals in ascending id order. When more follow, the `Link` header carries `rel="next"` with the URL of the next page (limit and status kept, plus an opaque cursor).',
      tags: ['pets'],
      querystring: ListPetsQuerySchema,
      response: { 200: PetsSchema, 400: E, 401: E, 503: E }
    }
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
      description: 'Stores the animal durably and answers 201 with it, its assigned id and `Location`. `status` defaults to `available`.',
      tags: ['pets'],
      body: NewPetSchema,
      response: { 201: PetSchema, 400: E, 401: E, 413: E, 415: E, 503: E }
    }
  }, async (request: FastifyRequest, reply: FastifyReply) => {
    const pet = await store.createPet(request.body as NewPet)
    reply.code(201).header('location', `/v1/pets/${pet.id}`)
    return pet
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
      response: { 200: PetSchema, 400: E, 401: E, 404: E, 410: E, 503: E }
    },
    // Runs for every response of this operation, errors (401 included) too.
    onSend: async (_request, reply) => {
      reply.header('deprecation', deprecation)
      reply.header('sunset', sunset)
      reply.header('link', '</v1/pets>; rel="successor-version"')
    },
    onRequest: async () => {
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
