import { createHash } from 'node:crypto'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'
import { answerRead, type ReadCache, refusePreconditions, represent, REVALIDATE, serialized } from '../http/representations.js'
import type { Clock } from '../runtime/clock.js'
import {
  ConditionalReadHeadersSchema, CreatePetHeadersSchema, ListPetsQuerySchema, NewPetSchema, PetIdParamsSchema,
  PetSchema, PetsSchema, type ListPetsQuery, type NewPet, type Pet
} from '../schemas/pets.js'
import { Ref } from '../schemas/common.js'
import { AUTHORIZATION_CODES, errorResponses, Headers, jsonResponse, notModified, RateLimitHeaders } from '../schemas/responses.js'
import type { CursorCodec } from '../services/cursor.js'
import { readPage } from '../services/pet-reads.js'
import type { Store } from '../store/store.js'

/** getPet's 200 body (and createPet's 201). */
const PET = Ref(PetSchema)
// Reads carry a strong ETag, revalidate and are compressed on request (http/representations.ts).
const cacheHeaders = { ETag: Headers.etag, 'Cache-Control': Headers.cacheControl, 'Content-Encoding': Headers.contentEncoding, Vary: Headers.vary }
/**
 * getPet's deprecation and removal, as the interface contract announces them: the Deprecation and
 * Sunset headers, and 410 from the sunset on.
 */
const GETPET_DEPRECATED_AT = new Date('2026-01-01T00:00:00Z')
const GETPET_SUNSET_AT = new Date('2030-12-05T00:00:00Z')
/** getPet's Link, on every response of that operation. */
const SUCCESSOR = '</v1/pets>; rel="successor-version"'

export interface PetRoutesOptions {
  store: Store
  /** getPet and listPets answers are kept finished here. */
  cache: ReadCache
  cursors: CursorCodec
  /** The app's clock: the sunset and Idempotency-Key expiry are judged by it. */
  now: Clock
  /** How long an Idempotency-Key is remembered (at least 24 h). */
  idempotencyTtlMs: number
}

/** The key itself: the header value without the structured-field quotes (the schema checked it). */
const unquote = (value: string): string => value.startsWith('"') ? value.slice(1, -1) : value

/** What makes two creates "the same request": the validated body, defaults applied (key order and spacing do not matter). */
function fingerprint (pet: NewPet): string {
  return createHash('sha256').update(JSON.stringify([pet.name, String(pet.categoryId), pet.status])).digest('hex')
}

/** The three operations of the Petstore v1 interface. Authentication is installed by the /v1 scope. */
export default async function petRoutes (fastify: FastifyInstance, opts: PetRoutesOptions): Promise<void> {
  const { store, cache, cursors } = opts
  const { metrics } = fastify
  const answer = { cacheControl: REVALIDATE, cache }
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  // Every request part of these routes is checked by the root's validator compiler (registerSchemas)
  // against the schema the route declares.
  // Idempotency-Keys (scoped by API key) of creates still running in this process: duplicates get 409.
  const inFlight = new Set<string>()
  /** The Link to the page after `last`, with this query's limit and status. */
  const nextLink = (q: ListPetsQuery, last: Pet): string => {
    const status = q.status === undefined ? '' : `&status=${q.status}`
    return `</v1/pets?limit=${q.limit}${status}&cursor=${cursors.encode(last.id, q.status)}>; rel="next"`
  }

  app.get('/pets', {
    schema: {
      operationId: 'listPets',
      summary: 'List animals',
      description: 'Returns a page of at most `limit` animals in ascending id order, optionally only those with the given `status`. ' +
        'When more follow, the `Link` header carries `rel="next"` with the URL of the next page (limit and status kept, plus an opaque `cursor`); ' +
        'follow it until no `Link` comes back to visit every animal exactly once, even while animals are being added. ' +
        'Parameters are strict: an unknown or repeated parameter is 400 `invalid_parameter`, never ignored.',
      tags: ['pets'],
      querystring: ListPetsQuerySchema,
      headers: ConditionalReadHeadersSchema,
      response: {
        200: jsonResponse('A page of animals (an empty array when there are none).', PetsSchema, { Link: Headers.linkNext, ...cacheHeaders, ...RateLimitHeaders }),
        304: notModified({ Link: Headers.linkNext, Vary: Headers.vary, ...RateLimitHeaders }),
        ...errorResponses(['invalid_parameter', ...AUTHORIZATION_CODES, 'precondition_failed', 'internal_error', 'service_unavailable'], RateLimitHeaders)
      }
    },
    config: { scope: 'pets:read' }
  }, async (request, reply) => {
    const q = request.query
    const afterId = q.cursor === undefined ? null : cursors.decode(q.cursor, q.status)
    if (afterId === undefined) throw new ApiError('invalid_parameter', "query parameter 'cursor' is not a cursor this service issued for this status filter")
    const key = `l${q.status ?? ''}:${afterId ?? ''}:${q.limit}`
    let rep = cache.get('page', key)
    if (rep === undefined) {
      const { pets, last, final } = await readPage(store, { afterId, limit: q.limit, status: q.status })
      rep = represent(serialized(reply, pets), last === undefined ? undefined : nextLink(q, last))
      if (final) cache.keep(key, rep)
    }
    return answerRead(request, reply, rep, answer)
  })

  app.post('/pets', {
    config: { scope: 'pets:write' },
    schema: {
      operationId: 'createPet',
      summary: 'Add an animal',
      description: 'Stores the animal durably (committed to disk before the answer) and answers 201 with it, its assigned `id` and `Location`. ' +
        '`status` defaults to `available`. The body is strict: unknown fields and a client-sent `id` are refused naming the field, and no value is coerced (`"7"` is not an integer). ' +
        '`categoryId` keeps all 64 bits: write integers past 2^53 as plain digits. ' +
        'With an `Idempotency-Key` request header, a retry with the same key and body answers the original 201 (and `Idempotent-Replayed: true`) without creating anything; ' +
        'the same key with another body is 422, and while the first request is still running, 409. ' +
        'Preconditions are refused, never ignored: `If-Match` or `If-None-Match` on a create is 400 `invalid_parameter` and nothing is created.',
      tags: ['pets'],
      body: Ref(NewPetSchema),
      headers: CreatePetHeadersSchema,
      response: {
        201: jsonResponse('The animal as stored, with its assigned id.', PET, { Location: Headers.location, 'Idempotent-Replayed': Headers.idempotentReplayed, ...RateLimitHeaders }),
        ...errorResponses(['validation_failed', 'invalid_json', 'invalid_parameter', ...AUTHORIZATION_CODES, 'idempotency_key_in_use', 'payload_too_large', 'unsupported_media_type', 'idempotency_key_reused', 'internal_error', 'service_unavailable', 'store_gone', 'outcome_unknown'], RateLimitHeaders)
      }
    },
    onRequest: refusePreconditions
  }, async (request, reply) => {
    const body = request.body
    const header = request.headers['idempotency-key']
    if (header === undefined) {
      const pet = await store.createPet(body)
      reply.code(201).header('location', `/v1/pets/${pet.id}`)
      return pet
    }
    const key = unquote(header)
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

  const deprecationHeaders = { Deprecation: Headers.deprecation, Sunset: Headers.sunset, Link: Headers.linkSuccessor }
  const deprecation = `@${Math.floor(GETPET_DEPRECATED_AT.getTime() / 1000)}`
  const sunset = GETPET_SUNSET_AT.toUTCString()
  metrics.watchGetPetSunset(GETPET_SUNSET_AT)
  app.get('/pets/:petId', {
    schema: {
      operationId: 'getPet',
      summary: 'Get an animal (deprecated)',
      description: `**Deprecated** since ${GETPET_DEPRECATED_AT.toUTCString()}; sunset ${sunset}, from when it answers 410 \`gone\`. ` +
        'Replacement: `GET /v1/pets` (listPets) with the `status` filter. ' +
        'Every response of this operation, errors included, carries `Deprecation`, `Sunset` and `Link: </v1/pets>; rel="successor-version"`.',
      deprecated: true,
      tags: ['pets'],
      params: PetIdParamsSchema,
      headers: ConditionalReadHeadersSchema,
      response: {
        200: jsonResponse('The animal.', PET, { ...deprecationHeaders, ...cacheHeaders, ...RateLimitHeaders }),
        304: notModified({ ...deprecationHeaders, Vary: Headers.vary, ...RateLimitHeaders }),
        ...errorResponses(['invalid_parameter', ...AUTHORIZATION_CODES, 'not_found', 'gone', 'precondition_failed', 'internal_error', 'service_unavailable'], { ...deprecationHeaders, ...RateLimitHeaders })
      }
    },
    config: { scope: 'pets:read' },
    // Runs for every response of this operation, errors (401 included) too.
    // Both hooks callback-style: an async hook costs a promise per request.
    onSend: (_request, reply, payload, done) => {
      reply.header('deprecation', deprecation)
      reply.header('sunset', sunset)
      reply.header('link', SUCCESSOR)
      done(null, payload)
    },
    onRequest: (request, _reply, done) => {
      // After authentication (scope hook): who still calls the deprecated operation, 410s included.
      metrics.countGetPetCall(request.apiKeyId)
      if (opts.now() >= GETPET_SUNSET_AT.getTime()) {
        done(new ApiError('gone', `GET /v1/pets/{petId} was removed on ${sunset}; use GET /v1/pets with the status filter instead`))
        return
      }
      done()
    }
  }, async (request, reply) => {
    const { petId } = request.params
    const key = `p${petId}`
    let rep = cache.get('pet', key)
    if (rep === undefined) {
      const pet = await store.getPet(petId)
      if (pet === undefined) throw new ApiError('not_found', `no pet with id ${petId}`)
      rep = cache.keep(key, represent(serialized(reply, pet)))
    }
    return answerRead(request, reply, rep, answer)
  })
}
