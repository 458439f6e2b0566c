import type { FastifyBaseLogger } from 'fastify'
import type { TraceFields } from '../observability/tracing.js'

/** What one access line says about a finished request (docs/reference/behaviour.md, "Logs"). */
export interface Access {
  /** The request id (pino's `reqId`, the field a request's child logger binds). */
  reqId: string
  keyId: number | undefined
  method: string
  route: string | undefined
  /** Redacted (services/redact.ts). */
  url: string
  status: number
  /** The Error's code, when the answer is one. */
  code: string | undefined
  ms: number
  trace?: TraceFields
}

export function writeAccessLine (log: FastifyBaseLogger, a: Access): void {
  log.info(a.trace === undefined
    ? { reqId: a.reqId, keyId: a.keyId, method: a.method, route: a.route, url: a.url, status: a.status, code: a.code, ms: a.ms }
    : { reqId: a.reqId, keyId: a.keyId, method: a.method, route: a.route, url: a.url, status: a.status, code: a.code, ms: a.ms, ...a.trace }, 'request completed')
}
