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
import requestChecks, { admissionChecks, type RequestSteps } from './plugins/request-checks.js'
import requestId from './plugins/request-id.js'
import shutdown from './plugins/shutdown.js'
import storeNotices from './logging/store-notices.js'
import storeOpening from './plugins/store-opening.js'
import healthRoutes from './routes/health.js'
import rootRoutes from './routes/root.js'
import v1Routes from './routes/v1.js'
import { requestLoggerFactory } from './logging/request-logger.js'
import { compilersFactory, registerSchemas } from './schemas/index.js'
import type { Store } from './store/store.js'
import type { Tracing } from './observability/tracing.js'
import { systemClock, type Clock } from './runtime/clock.js'

export interface AppOptions {
  config: Readonly<Config>
  store: Store
  /** The clock every time-based decision reads (runtime/clock.ts); tests inject one they move. */
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
 * The steps every request meets, by name, in this order (docs/explanation/architecture.md):
 * - on arrival, one synchronous onRequest hook (request-checks.ts): the request id and its header,
 *   nosniff and the edge checks (Host, target length, framing), then the asterisk-form target
 *   (`OPTIONS *`, about the server, never a CORS preflight; the admission checks run for it first);
 * - CORS when it is on (cors.ts): its headers, and the answer to a preflight;
 * - on admission, a second synchronous onRequest hook: the 503 while closing, the 503 of /v1 while
 *   a start's store is still being checked, the 503 while the event loop lags, each with CORS's
 *   headers for a browser to read;
 * - then, under /v1, the scope's first onRequest hook, the authentication policy (auth.ts):
 *   authentication, the key's limit, the route's scope, decided at once while the key cache and the
 *   in-memory limits answer;
 * - before a byte of the body, one synchronous preParsing hook: 404/405 and undecodable URLs, then
 *   Expect, Content-Encoding and the declared size (413), and 100-continue;
 * - then the route's validation and handler, and at the end the access line and metrics (observability.ts).
 */
const REQUEST_STEPS: RequestSteps = {
  onArrival: ['request id', 'edge', 'asterisk-form'],
  onAdmission: ['closing', 'opening', 'overload'],
  beforeBody: ['unrouted', 'body']
}

/**
 * Builds the service without listening: one plugin per concern, registered in the order a request
 * meets them (docs/explanation/architecture.md). Each plugin installs its own hooks and its own clean-up;
 * the checks every request meets on arrival, on admission and before its body run as one
 * synchronous hook per stage (request-checks.ts), in the order REQUEST_STEPS names them.
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
    await app.register(requestChecks, REQUEST_STEPS)
    await app.register(requestId)
    await app.register(hardening)
    await app.register(cors, { origins: config.corsOrigins })
    await app.register(admissionChecks)
    await app.register(shutdown)
    await app.register(storeOpening, { store })
    await app.register(overload, { maxEventLoopDelayMs: config.eventLoopMaxDelayMs, sampleIntervalMs: pressureSampleIntervalMs })
    await app.register(errorHandling, { store })
    await app.register(storeNotices, { store })
    installJsonBodyParser(app, config.bodyLimit)
    await app.register(beforeBody)
    await app.register(rateLimits, { config, now })
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
    // request.log binds the request id, and is made only for a request that logs more than its access line.
    ...(logger === false ? {} : { childLoggerFactory: requestLoggerFactory }),
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
