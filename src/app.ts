import type { Server } from 'node:http'
import Fastify, { type FastifyHttpOptions, type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify'
import type { Config } from './config/index.js'
import bearerAuth from './plugins/auth.js'
import beforeBody from './plugins/before-body.js'
import { clientErrorHandler } from './http/client-errors.js'
import cors from './plugins/cors.js'
import errorHandling, { routeBadUrls } from './plugins/errors.js'
import hardening from './plugins/hardening.js'
import { installJsonBodyParser } from './http/json-body.js'
import { Metrics } from './observability/metrics.js'
import observability from './plugins/observability.js'
import { docsRoutes, openApiPlugin } from './plugins/openapi.js'
import overload from './plugins/overload.js'
import rateLimits from './plugins/rate-limit.js'
import requestId from './plugins/request-id.js'
import shutdown from './plugins/shutdown.js'
import storeNotices from './logging/store-notices.js'
import storeOpening from './plugins/store-opening.js'
import healthRoutes from './routes/health.js'
import rootRoutes from './routes/root.js'
import v1Routes from './routes/v1.js'
import { compilersFactory, registerSchemas } from './schemas/index.js'
import type { Store } from './store/store.js'
import type { Tracing } from './observability/tracing.js'
import { systemClock, type Clock } from './runtime/clock.js'

export interface AppOptions {
  config: Readonly<Config>
  store: Store
  /** The clock time-based decisions read (runtime/clock.ts): key expiry, the sunset, Idempotency-Key expiry; tests inject one they move. Rate windows are @fastify/rate-limit's own. */
  now?: Clock
  /** pino options or false; the entry file chooses, tests keep it quiet. */
  logger?: FastifyServerOptions['logger']
  /** Where the counters go; the entry file serves them on METRICS_PORT. */
  metrics?: Metrics
  /** How often the event-loop delay is sampled for overload shedding (tests shorten it). */
  pressureSampleIntervalMs?: number
  /** OpenTelemetry tracing, when on (observability/tracing.ts; the entry starts it before the store opens). */
  tracing?: Tracing
}

/**
 * Builds the service without listening. Each concern is one plugin with its own hooks, registered in
 * the order a request meets them (Fastify runs hooks of one kind in registration order; the list is
 * drawn in docs/explanation/architecture.md):
 * - onRequest: the server span (tracing, when on), the request id and its header, nosniff and the
 *   edge checks (Host, target, framing), CORS (when on), the 503 while closing, the 503 while the
 *   event loop lags, the asterisk-form target (`OPTIONS *`); then, in the /v1 scope, the 503 while a
 *   start's store is still being checked and the authentication policy (key, limits, scope);
 * - preParsing, before a byte of the body is read: 404/405 and undecodable URLs (errors), then
 *   Expect, Content-Encoding, the declared size (413) and 100-continue (before-body);
 * - the route's validation and handler; onResponse: the access line and metrics (observability).
 * The store is the caller's until the app is built; from then on it is closed when the app closes,
 * last, after in-flight requests finished.
 */
export async function buildApp ({ config, store, now = systemClock, logger = false, metrics = new Metrics(store), pressureSampleIntervalMs, tracing }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(config, logger))
  let built = false
  // The first onClose hook, so the last to run (Fastify runs them in reverse order of registration).
  app.addHook('onClose', async () => { if (built) await store.close() })
  try {
    // First: the server span starts before any other onRequest hook (its context covers them all).
    if (tracing !== undefined) await app.register(tracing.plugin)
    await app.register(observability, { metrics, tracing })
    await app.register(requestId)
    await app.register(hardening)
    await app.register(cors, { origins: config.corsOrigins })
    await app.register(shutdown)
    await app.register(overload, { maxEventLoopDelayMs: config.eventLoopMaxDelayMs, sampleIntervalMs: pressureSampleIntervalMs })
    await app.register(errorHandling, { store })
    await app.register(storeOpening, { store })
    await app.register(storeNotices, { store })
    installJsonBodyParser(app)
    await app.register(beforeBody)
    await app.register(rateLimits, { config })
    await app.register(bearerAuth, { store, keyCacheTtlMs: config.keyCacheTtlMs, now })
    await app.register(openApiPlugin, { config })
    registerSchemas(app)
    await app.register(docsRoutes)
    await app.register(rootRoutes)
    await app.register(healthRoutes, { store })
    await app.register(v1Routes, { prefix: '/v1', config, store, now })
  } catch (err) {
    await app.close() // stops what already started (the overload sampler, Redis); the store stays the caller's
    throw err
  }
  built = true
  return app
}

/** Fastify's own settings: the ones that cannot be a plugin's, because the server is made with them. */
function serverOptions (config: Readonly<Config>, logger: FastifyServerOptions['logger']): FastifyHttpOptions<Server> {
  return {
    logger: logger === false
      ? false
      : {
          // We log no headers at all; these paths are a second guard should anything add them.
          redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'], censor: '[redacted]' },
          ...(logger === true ? {} : logger)
        },
    // One line per request, written by the observability plugin with what an operator needs and nothing secret.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimit,
    // Off on purpose: with it set, Fastify takes any X-Request-Id as-is; the requestId plugin keeps only well-formed ones.
    requestIdHeader: false,
    trustProxy: config.trustProxy,
    // Slow or idle clients cannot pin the server: whole request, headers, idle keep-alive.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    clientErrorHandler,
    // requireHostHeader: Node would answer a missing Host with an empty 400 of its own; the hardening plugin answers it.
    http: { requireHostHeader: false, headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, connectionsCheckingInterval: 1000 },
    // On close, idle keep-alive sockets are closed at once; busy ones after their response.
    forceCloseConnections: 'idle',
    // The shutdown plugin answers 503 itself while closing, in the Error shape.
    return503OnClosing: false,
    // No parameter is matched by a regex, so the router needs no length cap of its own (the hardening
    // plugin bounds the target: 414 past MAX_TARGET_LENGTH); a long petId meets its validator: 400.
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 16384 },
    // A URL the router cannot decode goes through the same plugins as any other (see plugins/errors.ts).
    frameworkErrors: routeBadUrls,
    // Our validator, and Fastify's own serializer compiled on first use rather than at start (schemas/index.ts).
    schemaController: { compilersFactory }
  }
}
