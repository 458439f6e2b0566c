import { randomBytes, randomUUID } from 'node:crypto'
import cors from '@fastify/cors'
import underPressure from '@fastify/under-pressure'
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify'
import type { Config } from './config.js'
import { ApiError } from './errors.js'
import { authenticate, installBearerAuth } from './plugins/auth.js'
import { clientErrorHandler, refuseConnect } from './plugins/client-errors.js'
import { installErrorHandling, notFound, RouteTable, sendError, toApiError } from './plugins/errors.js'
import { installJsonBodyParser } from './plugins/json-body.js'
import { Metrics } from './plugins/metrics.js'
import { RateLimits } from './plugins/rate-limit.js'
import { installDocsRoutes, installOpenApi } from './plugins/openapi.js'
import { registerSchemas } from './schemas/index.js'
import healthRoutes from './routes/health.js'
import orderRoutes from './routes/orders.js'
import petRoutes from './routes/pets.js'
import { ApiKeyVerifier } from './services/api-keys.js'
import { CursorCodec } from './services/cursor.js'
import { redactUrl } from './services/redact.js'
import type { Store } from './store/store.js'

export interface AppOptions {
  config: Readonly<Config>
  store: Store
  /** The clock (ms since epoch); tests inject one to cross the getPet sunset. */
  now?: () => number
  /** pino options or false; the entry file chooses, tests keep it quiet. */
  logger?: FastifyServerOptions['logger']
  /** Where the counters go; the entry file serves them on METRICS_PORT. */
  metrics?: Metrics
  /** How often the event-loop delay is sampled for overload shedding (tests shorten it). */
  pressureSampleIntervalMs?: number
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Headers a browser client may read (CORS_ORIGINS). */
const EXPOSED_HEADERS = ['Link', 'Location', 'ETag', 'Deprecation', 'Sunset', 'Retry-After', 'X-Request-Id', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed']

/**
 * Builds the service without listening. A request goes: request id, hardening headers, shutdown
 * check → overload check → (under /v1) refused address? → bearer auth → per-key rate limit → body
 * parsing → validation → handler → serialization by the response schema → (reads) ETag.
 * The store is the caller's: it is closed when the app closes, after in-flight requests finished.
 */
export async function buildApp ({ config, store, now = Date.now, logger = false, metrics = new Metrics(store), pressureSampleIntervalMs }: AppOptions): Promise<FastifyInstance> {
  const verifier = new ApiKeyVerifier(store, config.keyCacheTtlMs)
  const app = Fastify({
    logger: logger === false
      ? false
      : {
          // We log no headers at all; these paths are a second guard should anything add them.
          redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'], censor: '[redacted]' },
          ...(logger === true ? {} : logger)
        },
    // One line per request, written below with what an operator needs and nothing secret.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimit,
    // Off on purpose: with it set, Fastify takes any X-Request-Id as-is and never calls genReqId, which
    // reads the header itself and keeps only well-formed ids (no log forging with arbitrary text).
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      // An id that looks like an API key is replaced: a key pasted into the wrong header must not reach the logs.
      return typeof given === 'string' && REQUEST_ID.test(given) && !given.includes('psk_') ? given : randomUUID()
    },
    trustProxy: config.trustProxy,
    // Slow or idle clients cannot pin the server: whole request, headers, idle keep-alive.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    clientErrorHandler,
    // requireHostHeader: Node would answer a missing Host with an empty 400 of its own; the onRequest hook below answers it.
    http: { requireHostHeader: false, headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: 1000 },
    // On close, idle keep-alive sockets are closed at once; busy ones after their response.
    forceCloseConnections: 'idle',
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

  app.decorateRequest('apiKeyId', 0)
  const routes = new RouteTable()
  app.addHook('onRoute', (route) => {
    // The CORS preflight catch-all answers OPTIONS anywhere; it must not turn 404s into 405s.
    if (route.url !== '*' && route.url !== '/*') routes.record(route.method, route.url)
  })

  let closing = false
  let sweep: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    closing = true
    // server.close() closes the sockets idle at that instant; keep closing those that go idle
    // later (a keep-alive socket between two requests) so shutdown never waits for keepAliveTimeout.
    sweep = setInterval(() => app.server.closeIdleConnections(), 100)
    sweep.unref()
  })
  // Responses finishing during shutdown end their connection, so the client reconnects elsewhere.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    reply.header('x-content-type-options', 'nosniff')
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      reply.header('connection', 'close')
      throw new ApiError('bad_request', 'an HTTP/1.1 request needs a Host header')
    }
    if (closing) {
      reply.header('connection', 'close')
      throw new ApiError('service_unavailable', 'the server is shutting down; retry on another instance', { 'retry-after': '1' })
    }
  })
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observe(request, reply)
    request.log.info({
      keyId: request.apiKeyId === 0 ? undefined : request.apiKeyId,
      method: request.method,
      route: request.routeOptions.url,
      url: redactUrl(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100
    }, 'request completed')
    done()
  })

  installErrorHandling(app, () => metrics.storeErrors.inc({ store: store.kind }))
  installJsonBodyParser(app, config.bodyLimit)

  if (config.eventLoopMaxDelayMs > 0) {
    await app.register(underPressure, {
      maxEventLoopDelay: config.eventLoopMaxDelayMs,
      sampleInterval: pressureSampleIntervalMs ?? 1000,
      // A rejected promise goes to our error handler: the Error shape, with Retry-After.
      pressureHandler: async () => {
        metrics.overloaded.inc()
        throw new ApiError('service_unavailable', 'the server is overloaded; retry later', { 'retry-after': '2' })
      }
    })
  }

  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...config.corsOrigins],
      methods: ['GET', 'POST'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-None-Match', 'X-Request-Id'],
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: 600
    })
  }

  let limits: RateLimits
  try {
    limits = await RateLimits.install(app, config, metrics)
  } catch (err) {
    await app.close() // its timers (overload sampling) must not keep the process alive
    throw err
  }
  const cursorSecret = await store.getOrCreateSetting('cursor_hmac_key', () => randomBytes(32).toString('hex'))
  const cursors = new CursorCodec(Buffer.from(cursorSecret, 'hex'))

  // Expired Idempotency-Keys are already ignored; this only keeps the table small.
  const purge = setInterval(() => {
    store.purgeIdempotencyKeys(new Date(now() - config.idempotencyTtlMs))
      .catch((err: unknown) => app.log.warn({ err }, 'purging expired idempotency keys failed'))
  }, 3600000)
  purge.unref()

  // Close order: stop taking requests and finish in-flight ones (Fastify), flush key last-use, then the store.
  app.addHook('onClose', async () => {
    clearInterval(purge)
    clearInterval(sweep)
    await verifier.close()
    await store.close()
  })

  // Before any route: the document is collected from the routes as they are added.
  await installOpenApi(app, config)
  registerSchemas(app)
  await installDocsRoutes(app, config)
  await app.register(healthRoutes, { store })

  await app.register(async (v1) => {
    installBearerAuth(v1, verifier, limits)
    await v1.register(petRoutes, {
      store,
      cursors,
      getPetDeprecatedAt: config.getPetDeprecatedAt,
      getPetSunsetAt: config.getPetSunsetAt,
      now,
      metrics,
      idempotencyTtlMs: config.idempotencyTtlMs
    })
    await v1.register(orderRoutes)
    v1.setNotFoundHandler(notFound(routes))
  }, { prefix: '/v1' })

  app.setNotFoundHandler(notFound(routes))
  return app
}
