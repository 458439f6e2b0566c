// Loaded by tracing.ts only while tracing is on: the one module of the service that imports the
// OpenTelemetry SDK and its instrumentations.
import { createRequire } from 'node:module'
import { format } from 'node:util'
import { context, diag, propagation, type Span, SpanKind, SpanStatusCode, type TextMapPropagator, trace } from '@opentelemetry/api'
import { CompositePropagator, diagLogLevelFromString, getStringFromEnv, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { defaultResource, detectResources, envDetector, hostDetector, processDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node'
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { TracingConfig } from '../config/index.js'
import { redactUrl } from '../services/redact.js'
import { type IdempotentCreateResult, type PetReadsNow, petReadsNow, type Store } from '../store/store.js'
import type { TraceFields, Tracing } from './tracing-types.js'

const require = createRequire(import.meta.url)
const TRACER = 'petstore'
const ERROR_CODE = /^\{"code":"([a-z_]+)"/

/**
 * Starts OpenTelemetry's tracing SDK for traces only (metrics stay Prometheus', logs stdout's), from
 * its parts rather than the all-signals NodeSDK: a tracer provider with a batch span processor, the
 * one OTLP exporter of the configured encoding (loaded alone), the W3C propagators and the
 * resource. The standard OTEL_* variables are read by those parts themselves: the exporter reads
 * its endpoint, headers, timeout and compression, the provider its sampler and span limits, the
 * batch processor its OTEL_BSP_* settings, the resource OTEL_RESOURCE_ATTRIBUTES and
 * OTEL_SERVICE_NAME. Instrumented: pg (one span per query, statement text without parameter values)
 * and ioredis (the rate-limit counts), which must be patched before anything loads them, so this
 * runs before the store opens; and every request (serverSpans below).
 */
export async function startSdk (config: TracingConfig, load: { postgres: boolean, redis: boolean }): Promise<Tracing> {
  // The SDK's own diagnostics (export failures…), when asked for: on stderr, never among the JSON lines of stdout.
  const logLevel = getStringFromEnv('OTEL_LOG_LEVEL')
  if (logLevel !== undefined) {
    const write = (...args: unknown[]): void => { process.stderr.write(format(...args) + '\n') }
    diag.setLogger({ error: write, warn: write, info: write, debug: write, verbose: write }, { logLevel: diagLogLevelFromString(logLevel) })
  }
  const { OTLPTraceExporter } = config.protocol === 'http/json'
    ? await import('@opentelemetry/exporter-trace-otlp-http')
    : await import('@opentelemetry/exporter-trace-otlp-proto')
  const exporter: SpanExporter = new OTLPTraceExporter()
  // The resource NodeSDK would make: the SDK's own attributes, the environment's, the process and the host.
  let resource = defaultResource().merge(detectResources({ detectors: [envDetector, processDetector, hostDetector] }))
  if (config.serviceName !== undefined) resource = resource.merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }))
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] })
  provider.register({ propagator: propagatorOf(config.propagators) })

  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true })
    ]
  })
  // Patched in place now, so the store's and the rate limiter's later imports get the patched classes.
  if (load.postgres) require('pg')
  if (load.redis) require('ioredis')
  const tracer = trace.getTracer(TRACER)

  return {
    plugin: fp((app: FastifyInstance, _opts, done) => {
      serverSpans(app, tracer)
      done()
    }, { name: 'petstore-tracing' }),
    mixin: () => {
      const span = trace.getSpan(context.active())
      return span === undefined ? {} : fieldsOfSpan(span)
    },
    fieldsOf: (request) => {
      const span = (request as Traced)[SPAN]
      return span === null ? undefined : fieldsOfSpan(span)
    },
    traceStore: (store) => traceStore(store, tracer),
    shutdown: async () => { await provider.shutdown() }
  }
}

/** The propagators OTEL_PROPAGATORS names (config.ts); null: none, every request starts a trace. */
function propagatorOf (names: TracingConfig['propagators']): TextMapPropagator | null {
  if (names.length === 0) return null
  return new CompositePropagator({ propagators: names.map(n => n === 'tracecontext' ? new W3CTraceContextPropagator() : new W3CBaggagePropagator()) })
}

const SPAN = Symbol('petstore.serverSpan')
const ERROR = Symbol('petstore.requestError')
type Traced = FastifyRequest & { [SPAN]: Span | null, [ERROR]: Error | null }

/**
 * The server span of every request, as HTTP's semantic conventions name it: `GET /v1/pets/:petId`
 * (the method alone when no route matched), with http.request.method, http.route, url.path (the path
 * only: never the query and its values, and an API key sent in the path redacted; no header is
 * recorded), the status, the key's id (never the key) and an error answer's code as error.type. It
 * continues the caller's trace (the propagators), and the rest of the request runs in its context,
 * so the store's, pg's and ioredis' spans are its children. Started in the first onRequest hook
 * (this plugin is registered first), ended once the response is written (onResponse: the final
 * status, after every onSend hook). A 5xx is an error span, with the exception when one was thrown;
 * a 4xx is the client's error, not the span's (the conventions for server spans).
 *
 * Why not @fastify/otel, Fastify's OpenTelemetry plugin: it marks a span as an error for any error
 * thrown, 4xx included, before the error handler has chosen the status; it reads the route options
 * (a new object per read) several times and allocates an accessor object per request.opentelemetry()
 * call; and it brings a second copy of @opentelemetry/instrumentation and minimatch. Its CPU per
 * request and this plugin's could not be told apart (bench/ab-tracing.mjs, AB=on-vs-on: within the
 * run-to-run spread of identical builds on a shared machine); the reasons are the ones above.
 */
function serverSpans (app: FastifyInstance, tracer: ReturnType<typeof trace.getTracer>): void {
  app.decorateRequest(SPAN, null)
  app.decorateRequest(ERROR, null)
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
  // Before the error handler chose the status: kept for onResponse, which knows it.
  app.addHook('onError', (request, _reply, error, done) => {
    (request as Traced)[ERROR] = error
    done()
  })
  app.addHook('onSend', (request, reply, payload, done) => {
    // Every error body starts with its code (errors.ts); later onSend hooks do not change an error's status.
    const span = (request as Traced)[SPAN]
    if (span !== null && reply.statusCode >= 400 && typeof payload === 'string') {
      const code = ERROR_CODE.exec(payload)?.[1]
      if (code !== undefined) span.setAttribute('error.type', code)
    }
    done(null, payload)
  })
  app.addHook('onResponse', (request, reply, done) => {
    const span = (request as Traced)[SPAN]
    if (span !== null) {
      const status = reply.statusCode
      span.setAttribute('http.response.status_code', status)
      if (request.apiKeyId !== 0) span.setAttribute('petstore.api_key.id', request.apiKeyId)
      if (status >= 500) {
        const error = (request as Traced)[ERROR]
        if (error !== null) span.recordException(error)
        span.setStatus(error === null ? { code: SpanStatusCode.ERROR } : { code: SpanStatusCode.ERROR, message: error.message })
      }
      span.end()
    }
    done()
  })
}

function fieldsOfSpan (span: Span): TraceFields {
  const c = span.spanContext()
  return { trace_id: c.traceId, span_id: c.spanId, trace_flags: c.traceFlags === 1 ? '01' : c.traceFlags.toString(16).padStart(2, '0') }
}

type Method<S> = { [K in keyof S]: S[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof S]

/** Records a store operation's failure on its span; returns the error, for the caller to throw. */
function failed (span: Span, err: unknown): unknown {
  span.recordException(err as Error)
  span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message })
  return err
}

/**
 * SQLite has no instrumentation of its own: each store operation a request waits for is a client
 * span named as the conventions name database spans (`SELECT pets`), with db.system and no
 * parameter value. A create waits for its group-commit batch (its commit and WAL flush), so its span is that
 * wait. PostgreSQL's queries are pg's instrumentation's spans. On both, an idempotent create is an
 * `idempotency check` span with its outcome (created, replayed, mismatch), the queries inside it.
 */
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
        throw failed(span, err)
      } finally {
        span.end()
      }
    })) as S[K]
  }
  if (store.kind === 'sqlite') {
    const sqlite = (operation: string, table: string) => ({ 'db.system': 'sqlite', 'db.operation.name': operation, 'db.collection.name': table })
    // Reads are synchronous (readsNow), and getPet/listPets call them: the span is on the read itself.
    const reads = petReadsNow(store)
    if (reads !== undefined) {
      const read = <A extends unknown[], R>(fn: (...args: A) => R) => (...args: A): R =>
        tracer.startActiveSpan('SELECT pets', { kind: SpanKind.CLIENT, attributes: sqlite('SELECT', 'pets') }, (span) => {
          try {
            return fn.apply(reads, args)
          } catch (err) {
            throw failed(span, err)
          } finally {
            span.end()
          }
        })
      Object.defineProperty(traced, 'readsNow', { value: { getPet: read(reads.getPet), listPets: read(reads.listPets), settled: reads.settled.bind(reads) } satisfies PetReadsNow })
    }
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
