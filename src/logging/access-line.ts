import type { FastifyBaseLogger } from 'fastify'
import type { TraceFields } from '../observability/tracing.js'

/** What one access line says about a finished request (docs/reference/behaviour.md, "Logs"). */
export interface Access {
  keyId: number | undefined
  method: string
  /** The route template; undefined when no route matched. */
  route: string | undefined
  /** The URL as it may be logged (services/redact.ts). */
  url: string
  status: number
  ms: number
  /** The request's trace, while tracing is on. */
  trace?: TraceFields
}

/**
 * Writes the access line through request.log, Fastify's pino child bound to the request id:
 * `{"level":30,"time":…,"pid":…,"hostname":…,"reqId":…,"keyId":…,"method":…,"route":…,"url":…,
 * "status":…,"ms":…,"msg":"request completed"}` (a field that is undefined is left out).
 */
export function writeAccessLine (log: FastifyBaseLogger, a: Access): void {
  log.info(a.trace === undefined
    ? { keyId: a.keyId, method: a.method, route: a.route, url: a.url, status: a.status, ms: a.ms }
    : { keyId: a.keyId, method: a.method, route: a.route, url: a.url, status: a.status, ms: a.ms, ...a.trace }, 'request completed')
}
