import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import type { Scope } from '../schemas/scopes.js'
import { ApiKeyVerifier, missingScope, type KeyGrant, type KeyRefusal } from '../services/api-keys.js'
import { hasBody } from './before-body.js'
import type { Metrics } from '../observability/metrics.js'
import type { Store } from '../store/store.js'
import type { Clock } from '../runtime/clock.js'
import type { RateLimits } from './rate-limit.js'

declare module 'fastify' {
  interface FastifyRequest {
    apiKeyId: number
  }
  interface FastifyInstance {
    authenticate: (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void
  }
}

const CHALLENGE = 'Bearer realm="petstore"'
// RFC 6750 §2.1: "Bearer" (any case), one or more spaces, a b64token.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

function bearerToken (header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1]
}

/** Authenticated responses are private and never stored unless a route sets an ETag (then revalidated). */
export const NO_STORE = 'no-store'

// The fast path, for nearly every request: a trusted key with the route's scope that the limits admit
// in memory. admit() has no side effect; undefined leaves the decision to the whole policy.
interface Admission {
  admit: (authorization: string | undefined, now: number, scope: () => Scope | undefined) => number | undefined
  enter: (keyId: number, now: number, reply: FastifyReply) => void
}

function admission (limits: RateLimits, verifier: ApiKeyVerifier): Admission {
  return {
    admit: (authorization, now, scope) => {
      const token = bearerToken(authorization)
      const grant = token === undefined ? undefined : verifier.trusted(token, now)
      return grant !== undefined && missingScope(grant, scope) === undefined && limits.admitsAtOnce(grant.id, now) ? grant.id : undefined
    },
    enter: (keyId, now, reply) => {
      verifier.used(keyId, now)
      limits.countAtOnce(keyId, now, reply)
    }
  }
}

/** The one place a request is marked authenticated: the key's id on the request, and the response private. */
function authenticated (request: FastifyRequest, reply: FastifyReply, keyId: number): void {
  request.apiKeyId = keyId
  reply.header('cache-control', NO_STORE)
}

export type AuthRefusal = 'missing' | KeyRefusal | 'insufficient_scope'

// RFC 6750 §3.1. Unknown and revoked alike: a revoked key tells nothing more.
function refusedKey (why: KeyRefusal): ApiError {
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

// `error="invalid_token"` only when a key was actually sent (RFC 6750 §3.1).
function resolveKey (header: string | undefined, verifier: ApiKeyVerifier, metrics: Metrics): KeyGrant | Promise<KeyGrant> {
  if (header === undefined || !/^bearer\s+\S/i.test(header)) {
    metrics.authRefusals.inc({ reason: 'missing' })
    throw new ApiError('unauthorized', 'missing bearer API key: send Authorization: Bearer <API_KEY>', { 'www-authenticate': CHALLENGE })
  }
  const token = bearerToken(header)
  const granted = (verdict: KeyGrant | KeyRefusal): KeyGrant => {
    if (typeof verdict !== 'string') return verdict
    metrics.authRefusals.inc({ reason: verdict })
    throw refusedKey(verdict)
  }
  if (token === undefined) return granted('unknown')
  const verdict = verifier.check(token)
  return verdict instanceof Promise ? verdict.then(granted) : granted(verdict)
}

// Read only for a key without every scope: request.routeOptions is built on every read.
const routeScope = (request: FastifyRequest): Scope | undefined => request.routeOptions.config?.scope

// Calls `done` with `err`, or with the 429 the count threw, once the count settled (Redis) or at once.
function whenCounted (count: () => void | Promise<void>, done: HookHandlerDoneFunction, err?: Error): void {
  let counted
  try {
    counted = count()
  } catch (over) {
    done(over as Error)
    return
  }
  if (counted instanceof Promise) counted.then(() => { done(err) }, done)
  else done(err)
}

// Decides every request under /v1 (routes, 404/405, undecodable URLs) before its body is read. Past the
// fast path: an address over its failed-authentication budget gets 429 without a store lookup unless its
// key is known valid; a 401 counts against the address, a success against the key (429 over either
// limit), then a key without the route's scope gets 403.
function authenticationPolicy (limits: RateLimits, verifier: ApiKeyVerifier, atOnce: Admission, metrics: Metrics, clock: Clock): (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void {
  const knownKey = (request: FastifyRequest): boolean => {
    const token = bearerToken(request.headers.authorization)
    return token !== undefined && verifier.knownValid(token)
  }
  const accepted = (request: FastifyRequest, reply: FastifyReply, grant: KeyGrant, done: HookHandlerDoneFunction): void => {
    authenticated(request, reply, grant.id)
    const missing = missingScope(grant, () => routeScope(request))
    if (missing !== undefined) metrics.authRefusals.inc({ reason: 'insufficient_scope' })
    whenCounted(() => limits.countKeyUse(request, reply), done, missing === undefined ? undefined : insufficientScope(missing, grant))
  }
  // Only a 401 counts against the address: a store outage (503) says nothing about the caller.
  const refused = (request: FastifyRequest, reply: FastifyReply, err: unknown, done: HookHandlerDoneFunction): void => {
    if (err instanceof ApiError && err.statusCode === 401) whenCounted(() => limits.countFailure(request, reply), done, err)
    else done(err as Error)
  }
  // Callback-style: no promise unless the store or Redis is asked.
  return function authenticate (request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction): void {
    // With a body, one microtask later: a broken body framing gets its 400 (client-errors.ts) first.
    const done: HookHandlerDoneFunction = hasBody(request) ? (err?: Error) => { queueMicrotask(() => { next(err) }) } : next
    const now = clock()
    const admitted = atOnce.admit(request.headers.authorization, now, () => routeScope(request))
    if (admitted !== undefined) {
      authenticated(request, reply, admitted)
      atOnce.enter(admitted, now, reply)
      done()
      return
    }
    let grant: KeyGrant | Promise<KeyGrant>
    try {
      limits.refuseBlockedAddress(request, reply, knownKey)
      grant = resolveKey(request.headers.authorization, verifier, metrics)
    } catch (err) {
      refused(request, reply, err, done)
      return
    }
    if (!(grant instanceof Promise)) accepted(request, reply, grant, done)
    else grant.then(found => { accepted(request, reply, found, done) }, err => { refused(request, reply, err, done) })
  }
}

// The first onRequest hook of the /v1 scope (routes/v1.ts): nothing leaks to a caller without a valid key.
async function bearerAuth (app: FastifyInstance, opts: { store: Store, keyCacheTtlMs: number, now: Clock }): Promise<void> {
  const verifier = new ApiKeyVerifier(opts.store, opts.keyCacheTtlMs, opts.now)
  const atOnce = admission(app.rateLimits, verifier)
  app.decorateRequest('apiKeyId', 0)
  app.decorate('authenticate', authenticationPolicy(app.rateLimits, verifier, atOnce, app.metrics, opts.now))
  app.addHook('onClose', async () => { await verifier.close() })
}

export default fp(bearerAuth, { name: 'petstore-auth', dependencies: ['petstore-rate-limit'] })
