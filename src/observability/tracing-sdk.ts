// Loaded by tracing.ts only while tracing is on: the one module of the service that imports the
// OpenTelemetry SDK and its instrumentations.
import { createRequire } from 'node:module'
import { format } from 'node:util'
import { context, diag, type Span, SpanKind, SpanStatusCode, type TextMapPropagator, trace } from '@opentelemetry/api'
import { CompositePropagator, diagLogLevelFromString, getStringFromEnv, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core'
import { FastifyOtelInstrumentation } from '@fastify/otel'
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
import type { IdempotentCreateResult, PetReadsNow, Store } from '../store/store.js'
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
 * runs before the store opens; and Fastify, through @fastify/otel's plugin (plugin below).
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

  const fastify = new FastifyOtelInstrumentation({
    // One span per request, named and described here; no span per hook or handler.
    instrumentHooks: false,
    instrumentHandler: false,
    requestHook: describeRequest
  })
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      fastify
    ]
  })
  // Patched in place now, so the store's and the rate limiter's later imports get the patched classes.
  if (load.postgres) require('pg')
  if (load.redis) require('ioredis')
  const tracer = trace.getTracer(TRACER)

  return {
    plugin: fp(async (app: FastifyInstance) => {
      await app.register(fastify.plugin())
      app.addHook('onSend', (request, reply, payload, done) => {
        // Before @fastify/otel's own onSend ends the span: the key's id (never the key), and an
        // error answer's code (every error body starts with it, errors.ts) as error.type.
        const span = request.opentelemetry().span
        if (span !== null) {
          if (request.apiKeyId !== 0) span.setAttribute('petstore.api_key.id', request.apiKeyId)
          const code = reply.statusCode >= 400 && typeof payload === 'string' ? ERROR_CODE.exec(payload)?.[1] : undefined
          if (code !== undefined) span.setAttribute('error.type', code)
        }
        done(null, payload)
      })
    }, { name: 'petstore-tracing' }),
    mixin: () => {
      const span = trace.getSpan(context.active())
      return span === undefined ? {} : fieldsOfSpan(span)
    },
    fieldsOf: (request) => {
      const ctx = request.opentelemetry().context
      const span = ctx === null ? undefined : trace.getSpan(ctx)
      return span === undefined ? undefined : fieldsOfSpan(span)
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

/**
 * The server span as HTTP's semantic conventions name it, `GET /v1/pets/:petId` (the method alone
 * when no route matched), with the path only: never the query (its values), and any API key sent in
 * the path redacted. No header is recorded.
 */
function describeRequest (span: Span, request: FastifyRequest): void {
  const route = request.routeOptions.url
  span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
  const q = request.url.indexOf('?')
  span.setAttribute('url.path', redactUrl(q === -1 ? request.url : request.url.slice(0, q)))
}

function fieldsOfSpan (span: Span): TraceFields {
  const c = span.spanContext()
  return { trace_id: c.traceId, span_id: c.spanId, trace_flags: c.traceFlags.toString(16).padStart(2, '0') }
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
    const reads = store.readsNow
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
