import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import type { ApiKeyVerifier } from '../services/api-keys.js'
import type { RateLimits } from './rate-limit.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Id of the API key that authenticated the request (0 before authentication). */
    apiKeyId: number
  }
}

const CHALLENGE = 'Bearer realm="petstore"'
// RFC 6750 §2.1: "Bearer" (any case), one or more spaces, a b64token.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

function invalidKey (): ApiError {
  return new ApiError('unauthorized', 'the API key is invalid or revoked', {
    'www-authenticate': `${CHALLENGE}, error="invalid_token", error_description="the API key is invalid or revoked"`
  })
}

/**
 * The id of the key the request carries, synchronously while the verifier's cache answers (nearly
 * every request) and as a Promise when the store must be asked; throws (or rejects with) the 401
 * Error otherwise. `error="invalid_token"` only when a key was actually sent (RFC 6750 §3.1): a
 * missing header, another scheme, or a bare "Bearer" get the plain challenge.
 */
function resolveKey (header: string | undefined, verifier: ApiKeyVerifier): number | Promise<number> {
  if (header === undefined || !/^bearer\s+\S/i.test(header)) {
    throw new ApiError('unauthorized', 'missing bearer API key: send Authorization: Bearer <API_KEY>', { 'www-authenticate': CHALLENGE })
  }
  const token = BEARER.exec(header)?.[1]
  if (token === undefined) throw invalidKey()
  const id = verifier.check(token)
  if (id instanceof Promise) {
    return id.then(found => {
      if (found === undefined) throw invalidKey()
      return found
    })
  }
  if (id === undefined) throw invalidKey()
  return id
}

/** The id of the key the request carries; throws the 401 Error otherwise. */
export async function authenticate (header: string | undefined, verifier: ApiKeyVerifier): Promise<number> {
  return await resolveKey(header, verifier)
}

/**
 * Bearer authentication for every route of the scope it is installed on (and its 404/405 answers):
 * it runs first, before body parsing, validation or any lookup, so nothing leaks to a caller
 * without a valid key. Rate limits wrap it: an address over its failed-authentication budget is
 * refused before its key is looked at; a valid key is then counted against its own limit.
 */
export function installBearerAuth (scope: FastifyInstance, verifier: ApiKeyVerifier, limits: RateLimits): void {
  scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    limits.refuseBlockedAddress(request, reply)
    try {
      request.apiKeyId = await authenticate(request.headers.authorization, verifier)
    } catch (err) {
      await limits.countFailure(request, reply)
      throw err
    }
    // Authenticated responses are private and never stored unless a route sets an ETag (then revalidated).
    reply.header('cache-control', 'no-store')
    await limits.countKeyUse(request, reply)
  })
}
