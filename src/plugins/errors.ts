import type { IncomingMessage } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions, HTTPMethods } from 'fastify'
import fp from 'fastify-plugin'
import { originFormOf, targetFormProblem } from '../http/client-errors.js'
import { JSON_TYPE } from '../http/media-types.js'
import { ApiError, ERROR_CODES, type ErrorBody, type ErrorCode, OutcomeUnknownError, STORE_OPENING_MESSAGE, StoreGoneError, StoreOpeningError, StoreUnavailableError } from '../errors.js'
import { Outages } from '../logging/outages.js'
import type { Store } from '../store/store.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The Error this request was answered with (set by sendError), and what was thrown when the
     * error handler mapped it: the access line's `code`, the server span's error.type and exception.
     */
    failure: { error: ApiError, cause: Error } | null
  }
  interface FastifyInstance {
    /** The outage log (outages.ts): what is logged while a dependency is down, instead of a line per failed request. */
    outages: Outages
    /**
     * The 404/405 answer. The root scope uses it; a scope whose hooks must also run for its unknown
     * paths (the /v1 scope: authentication first) sets it as its own not-found handler.
     */
    notFoundHandler: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>
  }
}

const CODE_BY_STATUS = new Map<number, ErrorCode>(
  (Object.entries(ERROR_CODES) as Array<[ErrorCode, { status: number }]>)
    .filter(([code]) => code !== 'invalid_parameter' && code !== 'invalid_json' && code !== 'bad_request' && code !== 'outcome_unknown')
    .map(([code, { status }]) => [status, code])
)

const BAD_URL_MESSAGE = 'the request path is not valid percent-encoded UTF-8'

/** Fastify's errors the API answers in its own words: code and message by Fastify's code. */
const FASTIFY_ERRORS = new Map<string, [ErrorCode, string]>([
  ['FST_ERR_CTP_INVALID_MEDIA_TYPE', ['unsupported_media_type', 'request body must be application/json']],
  ['FST_ERR_CTP_BODY_TOO_LARGE', ['payload_too_large', 'request body is larger than the body limit']],
  ['FST_ERR_CTP_INVALID_CONTENT_LENGTH', ['invalid_parameter', 'Content-Length does not match the body']],
  ['FST_ERR_BAD_URL', ['invalid_parameter', BAD_URL_MESSAGE]],
  ['FST_ERR_MAX_PARAM_LENGTH', ['invalid_parameter', 'a path parameter is too long']]
])

/** Maps anything thrown while handling a request to the one Error shape the API answers with. */
export function toApiError (err: FastifyError | Error): ApiError {
  if (err instanceof ApiError) return err
  if (err instanceof StoreGoneError) return new ApiError('store_gone', err.message, { 'retry-after': '1' })
  if (err instanceof OutcomeUnknownError) return new ApiError('outcome_unknown', 'the store did not confirm the write: it may or may not have been made; retry with the same Idempotency-Key', { 'retry-after': '1' })
  // The one answer while a start's store is checked (plugins/store-opening.ts), whoever meets it.
  if (err instanceof StoreOpeningError) return new ApiError('service_unavailable', STORE_OPENING_MESSAGE, { 'retry-after': '1' })
  if (err instanceof StoreUnavailableError) return new ApiError('service_unavailable', 'the store is unavailable; retry later', { 'retry-after': '1' })
  const e = err as FastifyError
  const own = FASTIFY_ERRORS.get(e.code)
  if (own !== undefined) return new ApiError(...own)
  const status = e.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new ApiError(CODE_BY_STATUS.get(status) ?? 'invalid_parameter', e.message)
  }
  return new ApiError('internal_error', 'an unexpected error occurred; it has been logged with the request id')
}

/**
 * The method an Error's message names: GET for a HEAD request. HEAD's answer is GET's headers
 * without the body (RFC 9110 §9.3.2), Content-Length included, so the message HEAD's length is
 * measured from must be GET's.
 */
function namedMethod (request: FastifyRequest): string {
  return request.method === 'HEAD' ? 'GET' : request.method
}

/** Every Error answer goes out here (and is recorded on the request); `cause`: what was thrown, when it was not the ApiError itself. */
export function sendError (reply: FastifyReply, error: ApiError, cause: Error = error): FastifyReply {
  reply.request.failure = { error, cause }
  if (error.headers !== undefined) reply.headers(error.headers)
  return reply.code(error.statusCode).type(JSON_TYPE).send(error.toBody() satisfies ErrorBody)
}

/**
 * Raw requests whose URL the router could not decode, re-dispatched with the URL made decodable
 * (see routeBadUrls); the errorHandling plugin answers them once every scope's onRequest hooks ran.
 */
const badUrls = new WeakSet<IncomingMessage>()

/**
 * Fastify's `frameworkErrors` server option. A URL the router cannot percent-decode is refused by
 * the router itself, before any hook: no request id header, no shutdown or overload check, and
 * (under /v1) no authentication or rate limit. Instead of answering it here, apart from every
 * plugin, it is routed again with each `%` of its path escaped, so it reaches the scope it
 * addresses and passes through the very hooks any other request there passes through; the
 * errorHandling plugin then answers 400 before the body is read. An absolute-form target is routed by
 * the path it addresses; a target of no form a server takes (an absolute-form whose authority the
 * router cannot read) is routed to `/`, where the hardening plugin refuses it, 400 `bad_request`,
 * from the target the client sent. Anything else the router refuses (or a URL that is still
 * undecodable) is answered here directly.
 */
export const routeBadUrls: NonNullable<FastifyServerOptions['frameworkErrors']> = (err, request, reply) => {
  const raw = request.raw
  const url = raw.url
  if (err.code === 'FST_ERR_BAD_URL' && url !== undefined && !badUrls.has(raw)) {
    badUrls.add(raw)
    raw.originalUrl = url // request.originalUrl: what the client sent, for the access log and the edge checks
    raw.url = targetFormProblem(url) === undefined
      ? originFormOf(url).replace(/^[^?]*/, path => path.replaceAll('%', '%25'))
      : '/'
    request.server.routing(raw, reply.raw)
    return
  }
  // Not reached by a URL the router produces after the escaping above (nor by any route: none has an
  // asynchronous constraint); answered here, where no hook ran.
  sendError(reply, toApiError(err))
}

declare module 'node:http' {
  interface IncomingMessage {
    /** Set by Fastify when rewriteUrl is used, and by routeBadUrls: the URL as the client sent it. */
    originalUrl?: string
  }
}

/**
 * One error handler for the whole app (5xx details logged with the request id, never sent), the
 * 404/405 answers for unknown routes and methods, and the 400 for URLs the router cannot decode.
 */
async function errorHandling (app: FastifyInstance, opts: { store: Pick<Store, 'kind' | 'ping'> }): Promise<void> {
  const outages = new Outages(app.log)
  app.decorate('outages', outages)
  app.decorateRequest('failure', null)
  app.addHook('onClose', async () => { outages.close() })
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const error = toApiError(err)
    // An ApiError is an answer the service chose (501 for the unspecified orders route, 503 while
    // shutting down or shedding load): the access log line records it. A store that cannot work
    // now is an outage, logged once for all the requests it fails (outages.ts). Anything else is
    // unexpected: logged with its stack.
    if (err instanceof StoreOpeningError) {
      // A start whose store is still being checked: not an outage.
    } else if (err instanceof StoreGoneError) {
      // A store gone from under the service is told once, by the store (store-notices.ts), not per request.
      app.metrics.storeErrors.inc({ store: opts.store.kind })
    } else if (err instanceof StoreUnavailableError) {
      app.metrics.storeErrors.inc({ store: opts.store.kind })
      outages.failed(opts.store.kind, err, async () => await opts.store.ping())
    } else if (error.statusCode >= 500 && !(err instanceof ApiError)) {
      request.log.error({ err }, 'request failed')
    }
    return sendError(reply, error, err)
  })

  // The methods of the routes, for Allow. The CORS preflight catch-all answers OPTIONS anywhere; it
  // must not turn 404s into 405s.
  const methods = new Set<string>()
  app.addHook('onRoute', (route) => {
    if (route.url !== '*' && route.url !== '/*') for (const m of [route.method].flat()) methods.add(m)
  })
  /**
   * 405 with Allow when the path exists for other methods (each asked of Fastify's own router, with
   * the app's router options), else 404. A route that exists for this very method but found nothing
   * (a missing file under /docs/static) is a 404 too, never a 405 whose Allow would name the method
   * just refused.
   */
  const unrouted = (request: FastifyRequest): ApiError => {
    const path = request.url.split('?', 1)[0]!
    const allowed = [...methods].filter(method => app.findRoute({ method: method as HTTPMethods, url: path }) !== null).sort()
    if (allowed.length > 0 && !allowed.includes(request.method)) {
      return new ApiError('method_not_allowed', `${namedMethod(request)} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, { allow: allowed.join(', ') })
    }
    return new ApiError('not_found', `no route ${namedMethod(request)} ${path}`)
  }
  // The asterisk-form target (RFC 9112 §3.2.4) asks about the server as a whole, and only OPTIONS
  // may: the answer lists every method the server has. Any other method with it is refused. This
  // plugin registers after CORS (which leaves `*` alone: plugins/cors.ts), shutdown and overload
  // (app.ts), so their 503s come first.
  let serverMethods: string | undefined
  app.addHook('onRequest', (request, reply, done) => {
    if (request.url !== '*') {
      done()
    } else if (request.method !== 'OPTIONS') {
      done(new ApiError('bad_request', `the request target * is only for OPTIONS, not ${namedMethod(request)}`))
    } else {
      serverMethods ??= [...new Set([...methods, 'OPTIONS'])].sort().join(', ')
      reply.code(204).header('allow', serverMethods).send() // answered: the hooks end here
    }
  })

  app.decorate('notFoundHandler', async (request: FastifyRequest, reply: FastifyReply) => sendError(reply, unrouted(request)))
  app.setNotFoundHandler(app.notFoundHandler)

  // Before the body (preParsing): after every onRequest hook of the scope the URL addresses (authentication under
  // /v1), before the body is read, validated or routed to a handler.
  // A request no route takes is answered here too, 404 or 405, whatever its method and body: Fastify
  // would otherwise read, limit and parse the body of a not-found request (413, invalid_json, or its
  // own 400 for a QUERY without Content-Type) before the not-found handler runs.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    if (badUrls.has(request.raw)) done(new ApiError('invalid_parameter', BAD_URL_MESSAGE))
    else if (request.is404) done(unrouted(request))
    else done(null, payload)
  })
}

export default fp(errorHandling, { name: 'petstore-errors', dependencies: ['petstore-observability'] })
