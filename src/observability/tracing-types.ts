import type { FastifyPluginCallback, FastifyRequest } from 'fastify'
import type { Store } from '../store/store.js'

/** The trace a log line belongs to, as pino's OpenTelemetry convention names the fields. */
export interface TraceFields {
  trace_id: string
  span_id: string
  trace_flags: string
}

/**
 * OpenTelemetry tracing, while it is on (OTEL_EXPORTER_OTLP_ENDPOINT and the other standard
 * variables, config.ts). Everything that touches the SDK lives in tracing-sdk.ts, loaded by
 * startTracing() only then: with tracing off nothing of it is loaded, and the service's code holds
 * `undefined` where it would hold this, so a request pays nothing for it.
 */
export interface Tracing {
  /** Registered first by buildApp: the server span of every request (tracing-sdk.ts). */
  plugin: FastifyPluginCallback
  /** pino's mixin: the trace and span ids of the active span on every log line written inside one. */
  mixin: () => Partial<TraceFields>
  /** The ids of a request's server span, for its access line (written after the span ended). */
  fieldsOf: (request: FastifyRequest) => TraceFields | undefined
  /** The store with a span around each operation the driver's own instrumentation does not cover. */
  traceStore: <S extends Store>(store: S) => S
  /** Exports the spans still buffered and stops. */
  shutdown: () => Promise<void>
}
