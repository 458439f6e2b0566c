import { createRequire } from 'node:module'
import { format } from 'node:util'
import { context, diag, propagation, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { CompositePropagator, diagLogLevelFromString, getStringFromEnv, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { defaultResource, detectResources, envDetector, hostDetector, processDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node'
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config/index.js'
import { redactUrl } from '../services/redact.js'
import { type IdempotentCreateResult, type Store } from '../store/store.js'

const require = createRequire(import.meta.url)
const TRACER = 'petstore'

/**
 * Traces only, from the SDK's parts rather than the all-signals NodeSDK: one OTLP exporter (the
 * configured encoding, loaded alone); the standard OTEL_* variables are read by the parts themselves.
 * What it returns is the `Tracing` of observability/tracing.ts.
 */
export async function startSdk (config: NonNullable<Config['tracing']>, load: { postgres: boolean, redis: boolean }) {
  // On stderr, never among the JSON lines of stdout.
  const logLevel = getStringFromEnv('OTEL_LOG_LEVEL')
  if (logLevel !== undefined) {
    const write = (...args: unknown[]): void => { process.stderr.write(format(...args) + '\n') }
    diag.setLogger({ error: write, warn: write, info: write, debug: write, verbose: write }, { logLevel: diagLogLevelFromString(logLevel) })
  }
  const { OTLPTraceExporter } = config.protocol === 'http/json'
    ? await import('@opentelemetry/exporter-trace-otlp-http')
    : await import('@opentelemetry/exporter-trace-otlp-proto')
  const exporter: SpanExporter = new OTLPTraceExporter()
  let resource = defaultResource().merge(detectResources({ detectors: [envDetector, processDetector, hostDetector] }))
  if (config.serviceName !== undefined) resource = resource.merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }))
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] })
  // The propagators OTEL_PROPAGATORS names (config/index.ts); none: every request starts a trace.
  const propagators = config.propagators.map(n => n === 'tracecontext' ? new W3CTraceContextPropagator() : new W3CBaggagePropagator())
  provider.register({ propagator: new CompositePropagator({ propagators }) })

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true })
    ]
  })
  // Patched now, before the store and the rate limiter import them.
  if (load.postgres) require('pg')
  if (load.redis) require('ioredis')
  const tracer = trace.getTracer(TRACER)

  return {
    plugin: fp((app: FastifyInstance, _opts, done) => {
      serverSpans(app, tracer)
      done()
    }, { name: 'petstore-tracing' }),
    // pino's mixin: the active span's fields for a line (`line`, the object the line was logged with).
    // pino puts a mixin's fields before the line's own: a line that names its request (the access
    // line) keeps reqId ahead of them, where a child logger bound to the request writes it.
    mixin: (line: { reqId?: unknown }) => {
      const span = trace.getSpan(context.active())
      if (span === undefined) return {}
      return 'reqId' in line ? { reqId: line.reqId, ...fieldsOfSpan(span) } : fieldsOfSpan(span)
    },
    fieldsOf: (request: FastifyRequest) => {
      const span = (request as Traced)[SPAN]
      return span === null ? undefined : fieldsOfSpan(span)
    },
    traceStore: <S extends Store>(store: S) => traceStore(store, tracer),
    shutdown: async () => { await provider.shutdown() }
  }
}

const SPAN = Symbol('petstore.serverSpan')
type Traced = FastifyRequest & { [SPAN]: Span | null }

/**
 * The server span of every request, per HTTP's semantic conventions: url.path without the query, an
 * API key in the path redacted, no header, the key's id (never the key); error.type is the Error's
 * code; a 5xx is an error span with what was thrown, a 4xx is not. Ended in onResponse, when the
 * final status is known.
 *
 * Why not @fastify/otel: it marks any thrown error (4xx too) before the error handler chose the
 * status, allocates per request, and brings a second @opentelemetry/instrumentation. Its CPU per
 * request and this one's could not be told apart (bench/ab-tracing.mjs, AB=on-vs-on: within the
 * run-to-run spread of identical builds), so these reasons decide.
 */
function serverSpans (app: FastifyInstance, tracer: ReturnType<typeof trace.getTracer>): void {
  app.decorateRequest(SPAN, null)
  app.addHook('onRequest', (request, _reply, done) => {
    const { method, url } = request
    const route = request.routeOptions.url
    const q = url.indexOf('?')
    const attributes: Record<string, string> = { 'http.request.method': method, 'url.path': redactUrl(q === -1 ? url : url.slice(0, q)) }
    if (route !== undefined) attributes['http.route'] = route
    const parent = propagation.extract(context.active(), request.headers)
    const span = tracer.startSpan(route === undefined ? method : `${method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent)
    ;(request as Traced)[SPAN] = span
    context.with(trace.setSpan(parent, span), done)
  })
  app.addHook('onResponse', (request, reply, done) => {
    const span = (request as Traced)[SPAN]
    if (span !== null) {
      const status = reply.statusCode
      span.setAttribute('http.response.status_code', status)
      if (request.apiKeyId !== 0) span.setAttribute('petstore.api_key.id', request.apiKeyId)
      // Decorated by the errors plugin, registered after this one.
      const failure = request.failure ?? null
      if (failure !== null) span.setAttribute('error.type', failure.error.code)
      if (status >= 500) {
        if (failure !== null) span.recordException(failure.cause)
        span.setStatus(failure === null ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message: failure.cause.message })
      }
      span.end()
    }
    done()
  })
}

function fieldsOfSpan (span: Span) {
  const c = span.spanContext()
  return { trace_id: c.traceId, span_id: c.spanId, trace_flags: c.traceFlags === 1 ? '01' : c.traceFlags.toString(16).padStart(2, '0') }
}

type Method<S> = { [K in keyof S]: S[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof S]

/** SQLite has no instrumentation of its own: a client span per store operation, no parameter value. */
function traceStore<S extends Store> (store: S, tracer: ReturnType<typeof trace.getTracer>): S {
  const traced = Object.create(store) as S
  const wrap = <K extends Method<S>>(method: K, name: string, attributes: Record<string, string | boolean>, after?: (result: unknown, span: Span) => void): void => {
    const inner = traced[method] as (...args: unknown[]) => Promise<unknown>
    traced[method] = (async (...args: unknown[]) => await tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        const result = await inner.apply(traced, args)
        after?.(result, span)
        return result
      } catch (err) {
        span.recordException(err as Error)
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message })
        throw err
      } finally {
        span.end()
      }
    })) as S[K]
  }
  if (store.kind === 'sqlite') {
    const sqlite = (operation: string, table: string) => ({ 'db.system': 'sqlite', 'db.operation.name': operation, 'db.collection.name': table })
    wrap('getPet' as Method<S>, 'SELECT pets', sqlite('SELECT', 'pets'))
    wrap('listPets' as Method<S>, 'SELECT pets', sqlite('SELECT', 'pets'))
    wrap('findApiKeyByHash' as Method<S>, 'SELECT api_keys', sqlite('SELECT', 'api_keys'))
    wrap('ping' as Method<S>, 'SELECT', { 'db.system': 'sqlite', 'db.operation.name': 'SELECT' })
    wrap('createPet' as Method<S>, 'INSERT pets', { ...sqlite('INSERT', 'pets'), 'petstore.group_commit': true })
    wrap('createPetIdempotent' as Method<S>, 'INSERT pets', { ...sqlite('INSERT', 'pets'), 'petstore.group_commit': true })
  }
  wrap('createPetIdempotent' as Method<S>, 'idempotency check', {}, (result, span) => {
    span.setAttribute('petstore.idempotency.outcome', (result as IdempotentCreateResult).outcome)
  })
  return traced
}
