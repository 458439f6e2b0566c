import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import type { Scope } from '../schemas/scopes.js'
import { ApiKeyVerifier, missingScope, type KeyGrant, type KeyRefusal } from '../services/api-keys.js'
import type { Store } from '../store/store.js'
import type { Clock } from '../runtime/clock.js'

declare module 'fastify' {
  interface FastifyRequest {
    apiKeyId: number
  }
  interface FastifyInstance {
    authenticate: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  }
}

const CHALLENGE = 'Bearer realm="petstore"'
// RFC 6750 §2.1: "Bearer" (any case), one or more spaces, a b64token.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

// RFC 6750 §3.1: `error="invalid_token"` only when a key was actually sent. Unknown and revoked
// alike: a revoked key tells nothing more.
function refusedKey (why: KeyRefusal | 'missing'): ApiError {
  if (why === 'missing') return new ApiError('unauthorized', 'missing bearer API key: send Authorization: Bearer <API_KEY>', { 'www-authenticate': CHALLENGE })
  const [code, description] = why === 'expired'
    ? ['key_expired', 'the API key has expired'] as const
    : ['unauthorized', 'the API key is invalid or revoked'] as const
  return new ApiError(code, description, { 'www-authenticate': `${CHALLENGE}, error="invalid_token", error_description="${description}"` })
}

function insufficientScope (scope: Scope, grant: KeyGrant): ApiError {
  return new ApiError('insufficient_scope', `this operation needs the scope ${scope}; this API key holds ${[...grant.scopes].join(', ')}`, {
    'www-authenticate': `${CHALLENGE}, error="insufficient_scope", scope="${scope}"`
  })
}

/**
 * The authentication policy, an onRequest hook of the /v1 scope after the opening 503 (routes/v1.ts): it decides
 * every request there (routes, 404/405, undecodable URLs) before its body is read.
 * 1. An address over its failed-authentication budget gets 429 without a store lookup, unless its
 *    key is one this instance verified valid (from memory): behind NAT or a proxy many clients share
 *    an address, and one client guessing keys must not lock out the others.
 * 2. The key is verified; a 401 counts against the address (429 once over its limit).
 * 3. A valid key is counted against its own limit (429), then a key without the route's scope gets 403.
 */
async function bearerAuth (app: FastifyInstance, opts: { store: Store, keyCacheTtlMs: number, now: Clock }): Promise<void> {
  const verifier = new ApiKeyVerifier(opts.store, opts.keyCacheTtlMs, opts.now)
  const { metrics, rateLimits } = app

  app.decorateRequest('apiKeyId', 0)
  app.decorate('authenticate', async function authenticate (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization
    const token = header === undefined ? undefined : BEARER.exec(header)?.[1]
    if (token === undefined || !verifier.knownValid(token)) await rateLimits.address(request, reply, { increment: false })
    const sent = token !== undefined || (header !== undefined && /^bearer\s+\S/i.test(header))
    // A store outage (503) is thrown by verify: it says nothing about the caller, so only a 401 counts against the address.
    const grant = !sent ? 'missing' : token === undefined ? 'unknown' : await verifier.verify(token)
    if (typeof grant === 'string') {
      metrics.authRefusals.inc({ reason: grant })
      await rateLimits.address(request, reply)
      throw refusedKey(grant)
    }
    request.apiKeyId = grant.id
    // Authenticated responses are private and never stored unless a route sets an ETag (then revalidated).
    reply.header('cache-control', 'no-store')
    // routeOptions is built on every read: asked only of a key without every scope.
    const missing = missingScope(grant, () => request.routeOptions.config?.scope)
    if (missing !== undefined) metrics.authRefusals.inc({ reason: 'insufficient_scope' })
    await rateLimits.key(request, reply)
    if (missing !== undefined) throw insufficientScope(missing, grant)
  })
  app.addHook('onClose', async () => { await verifier.close() })
}

export default fp(bearerAuth, { name: 'petstore-auth', dependencies: ['petstore-rate-limit'] })
