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
    /** Id of the API key that authenticated the request (0 before authentication). */
    apiKeyId: number
  }
  interface FastifyInstance {
    /** The authentication policy, as an onRequest hook for the scope of the protected routes. */
    authenticate: (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void
  }
}

const CHALLENGE = 'Bearer realm="petstore"'
// RFC 6750 §2.1: "Bearer" (any case), one or more spaces, a b64token.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/** The token of a well-formed bearer Authorization header, else undefined. */
function bearerToken (header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1]
}

/** Authenticated responses are private and never stored unless a route sets an ETag (then revalidated). */
export const NO_STORE = 'no-store'

/**
 * The policy where it needs no wait and no answer of its own, as for nearly every request: a
 * well-formed bearer key that the verifier's cache trusts as valid now, holding the scope the route
 * needs, and limits that let it through at once (counted in memory, no address block in force, room
 * left under the key's limit). The authentication hook takes this step first, the whole policy only
 * when it does not admit.
 */
interface Admission {
  /**
   * The key's id when the request is admitted at once; undefined: the whole policy decides. No side
   * effect. `scope` names what the route needs (its config.scope); it is asked only of a key that
   * does not hold every scope.
   */
  admit: (authorization: string | undefined, now: number, scope: () => Scope | undefined) => number | undefined
  /** Admits it: the key's use recorded, and the request counted against the key (its headers set on `reply`). */
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

/** Why the policy refused a request, as petstore_auth_refusals_total counts it: never the key itself. */
export type AuthRefusal = 'missing' | KeyRefusal | 'insufficient_scope'

/** The 401 for a key sent but refused (RFC 6750 §3.1): unknown and revoked alike, so a revoked key tells nothing more. */
function refusedKey (why: KeyRefusal): ApiError {
  const [code, description] = why === 'expired'
    ? ['key_expired', 'the API key has expired'] as const
    : ['unauthorized', 'the API key is invalid or revoked'] as const
  return new ApiError(code, description, { 'www-authenticate': `${CHALLENGE}, error="invalid_token", error_description="${description}"` })
}

/** The 403 for a valid key without the scope the route needs (RFC 6750 §3.1). */
function insufficientScope (scope: Scope, grant: KeyGrant): ApiError {
  return new ApiError('insufficient_scope', `this operation needs the scope ${scope}; this API key holds ${[...grant.scopes].join(', ')}`, {
    'www-authenticate': `${CHALLENGE}, error="insufficient_scope", scope="${scope}"`
  })
}

/**
 * The grant of the key the request carries, synchronously while the verifier's cache answers (nearly
 * every request) and as a Promise when the store must be asked; throws (or rejects with) the 401
 * Error otherwise, counted by its reason. `error="invalid_token"` only when a key was actually sent
 * (RFC 6750 §3.1): a missing header, another scheme, or a bare "Bearer" get the plain challenge.
 */
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

/**
 * Counts a request against a rate limit, then calls `done` with `err` (or the 429 the count threw or
 * rejected with): at once when the count was made in memory, after it settles when it went to Redis.
 */
/**
 * The scope the request's route declares (routes/v1.ts); undefined where no route matched (404, 405).
 * Read only for a key that does not hold every scope: request.routeOptions is built on every read.
 */
const routeScope = (request: FastifyRequest): Scope | undefined => request.routeOptions.config?.scope

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

/**
 * The authentication policy: the one function that decides every request under /v1, known routes,
 * unknown paths and methods (404/405), and URLs the router cannot decode alike (see routeBadUrls in
 * errors.ts, which routes those through the same scope). A request the admission admits at once
 * is through (its key counted, its headers set); any other meets, in order:
 * 1. an address that used up its failed-authentication budget is refused with 429 at once, unless
 *    its key is one already known valid (from memory): it never reaches the store;
 * 2. the bearer key is parsed and verified (the verifier's cache, else one store lookup);
 * 3. a failure (401: missing, unknown, revoked or expired) is counted against the address (429 once
 *    over its budget, else 401);
 * 4. a success sets `request.apiKeyId`, marks the response private, and is counted against the key
 *    (429 once over its limit); then a key without the scope the route declares (config.scope) is
 *    refused with 403, as an authenticated client: against its key's limit, not its address's.
 * All of it before the body is read: this is the scope's first onRequest hook.
 */
function authenticationPolicy (limits: RateLimits, verifier: ApiKeyVerifier, atOnce: Admission, metrics: Metrics, clock: Clock): (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void {
  const knownKey = (request: FastifyRequest): boolean => {
    const token = bearerToken(request.headers.authorization)
    return token !== undefined && verifier.knownValid(token)
  }
  // A success: the key's id on the request, the response private, the request counted against the
  // key; then the route's scope (403 once counted, unless the count answered 429).
  const accepted = (request: FastifyRequest, reply: FastifyReply, grant: KeyGrant, done: HookHandlerDoneFunction): void => {
    authenticated(request, reply, grant.id)
    const missing = missingScope(grant, () => routeScope(request))
    if (missing !== undefined) metrics.authRefusals.inc({ reason: 'insufficient_scope' })
    whenCounted(() => limits.countKeyUse(request, reply), done, missing === undefined ? undefined : insufficientScope(missing, grant))
  }
  // A failure: only a refused key counts against the address. A store that cannot answer (503) says
  // nothing about the caller, and during an outage would otherwise lock out valid clients.
  const refused = (request: FastifyRequest, reply: FastifyReply, err: unknown, done: HookHandlerDoneFunction): void => {
    if (err instanceof ApiError && err.statusCode === 401) whenCounted(() => limits.countFailure(request, reply), done, err)
    else done(err as Error)
  }
  // Callback-style, not async: while the key cache answers and limits count in memory (nearly every
  // request) nothing here waits, so no promise is made; only a store lookup or a Redis count is awaited.
  return function authenticate (request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction): void {
    // A request with a body goes on (or is refused) one microtask later, after the bytes already
    // received are parsed: a body whose framing is broken (a bad chunk) is answered 400 by the
    // parser's handler (client-errors.ts), not 401, 404 or 200 before it was seen.
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

/**
 * Bearer authentication over hashed API keys. Decorates the app with `authenticate`, the policy
 * above, for the scope that holds the protected routes to install as its first onRequest hook
 * (routes/v1.ts), so it runs before body parsing, validation or any lookup and nothing leaks to a
 * caller without a valid key. Owns the key verifier: its last-use times are flushed on close.
 */
async function bearerAuth (app: FastifyInstance, opts: { store: Store, keyCacheTtlMs: number, now: Clock }): Promise<void> {
  const verifier = new ApiKeyVerifier(opts.store, opts.keyCacheTtlMs, opts.now)
  const atOnce = admission(app.rateLimits, verifier)
  app.decorateRequest('apiKeyId', 0)
  app.decorate('authenticate', authenticationPolicy(app.rateLimits, verifier, atOnce, app.metrics, opts.now))
  app.addHook('onClose', async () => { await verifier.close() })
}

export default fp(bearerAuth, { name: 'petstore-auth', dependencies: ['petstore-rate-limit'] })
