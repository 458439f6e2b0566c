import { randomBytes, randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Config } from './config.js'
import { ApiError } from './errors.js'
import { authenticate, installBearerAuth } from './plugins/auth.js'
import { clientErrorHandler, refuseConnect } from './plugins/client-errors.js'
import { installErrorHandling, notFound, RouteTable, sendError, toApiError } from './plugins/errors.js'
import { installJsonBodyParser } from './plugins/json-body.js'
import healthRoutes from './routes/health.js'
import orderRoutes from './routes/orders.js'
import petRoutes from './routes/pets.js'
import { ApiKeyVerifier } from './services/api-keys.js'
import { CursorCodec } from './services/cursor.js'
import type { Store } from './store/store.js'

export interface AppOptions {
  config: Readonly<Config>
  store: Store
  /** The clock (ms since epoch); tests inject one to cross the getPet sunset. */
  now?: () => number
  /** pino options or false; the entry file chooses, tests keep it quiet. */
  logger?: FastifyServerOptions['logger']
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Builds the service without listening. A request goes: request id → shutdown check →
 * (under /v1) bearer auth → body parsing → validation → handler → serialization by the response schema.
 * The store is the caller's: it is closed when the app closes.
 */
export async function buildApp ({ config, store, now = Date.now, logger = false }: AppOptions): Promise<FastifyInstance> {
  const verifier = new ApiKeyVerifier(store, config.keyCacheTtlMs)
  const app = Fastify({
    logger: logger === false
      ? false
      : { redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]'], censor: '[redacted]' }, ...(logger === true ? {} : logger) },
    bodyLimit: config.bodyLimit,
    // Off on purpose: with it set, Fastify takes any X-Request-Id as-is and never calls genReqId, which
    // reads the header itself and keeps only well-formed ids (no log forging with arbitrary text).
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    clientErrorHandler,
    // Node would answer a missing Host with an empty 400 of its own; the onRequest hook below answers it.
    http: { requireHostHeader: false },
    // We answer 503 ourselves while closing, in the Error shape.
    return503OnClosing: false,
    // No parameter is matched by a regex, so the router needs no length cap of its own (Node bounds the
    // URL at 16 KiB); a long petId then meets its validator: 400 with getPet's headers, not a bare 414.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 16384 },
    // A URL the router cannot decode (bad percent-encoding) is answered before any hook runs. Answer it
    // in the Error shape, and under /v1 only after authentication, as every other /v1 request.
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id)
      const path = request.url
      const underV1 = path === '/v1' || path.startsWith('/v1/') || path.startsWith('/v1?')
      void (underV1 ? authenticate(request.headers.authorization, verifier) : Promise.resolve())
        .then(() => toApiError(err), (authError: Error) => toApiError(authError))
        .then((error) => sendError(reply, error))
    }
  })

  app.server.on('connect', refuseConnect)

  const routes = new RouteTable()
  app.addHook('onRoute', (route) => routes.record(route.method, route.url))

  let closing = false
  app.addHook('preClose', async () => { closing = true })
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      reply.header('connection', 'close')
      throw new ApiError('bad_request', 'an HTTP/1.1 request needs a Host header')
    }
    if (closing) {
      reply.header('connection', 'close')
      throw new ApiError('service_unavailable', 'the server is shutting down; retry on another instance', { 'retry-after': '1' })
    }
  })

  installErrorHandling(app)
  installJsonBodyParser(app, config.bodyLimit)

  const cursorSecret = await store.getOrCreateSetting('cursor_hmac_key', () => randomBytes(32).toString('hex'))
  const cursors = new CursorCodec(Buffer.from(cursorSecret, 'hex'))
  // Close order: stop taking requests (Fastify), flush key last-use, then the store.
  app.addHook('onClose', async () => {
    await verifier.close()
    await store.close()
  })

  await app.register(healthRoutes, { store })

  await app.register(async (v1) => {
    installBearerAuth(v1, verifier)
    v1.decorateRequest('apiKeyId', 0)
    await v1.register(petRoutes, {
      store,
      cursors,
      getPetDeprecatedAt: config.getPetDeprecatedAt,
      getPetSunsetAt: config.getPetSunsetAt,
      now
    })
    await v1.register(orderRoutes)
    v1.setNotFoundHandler(notFound(routes))
  }, { prefix: '/v1' })

  app.setNotFoundHandler(notFound(routes))
  return app
}
