import type { FastifyPluginCallback, FastifyRequest } from 'fastify'
import type { Store } from '../store/store.js'

export interface TraceFields {
  trace_id: string
  span_id: string
  trace_flags: string
}

/** Present only while tracing is on: tracing-sdk.ts, the one module importing the SDK, is loaded then. */
export interface Tracing {
  plugin: FastifyPluginCallback
  /** pino's mixin: the active span's fields for a line (`line`, the object the line was logged with). */
  mixin: (line: { reqId?: unknown }) => Partial<TraceFields> & { reqId?: unknown }
  fieldsOf: (request: FastifyRequest) => TraceFields | undefined
  traceStore: <S extends Store>(store: S) => S
  shutdown: () => Promise<void>
}
