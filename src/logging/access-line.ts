import type { FastifyBaseLogger } from 'fastify'
import type { TraceFields } from '../observability/tracing.js'

/** What one access line says about a finished request (docs/reference/behaviour.md, "Logs"). */
export interface Access {
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
    ? { keyId: a.keyId, method: a.method, route: a.route, url: a.url, status: a.status, code: a.code, ms: a.ms }
    : { keyId: a.keyId, method: a.method, route: a.route, url: a.url, status: a.status, code: a.code, ms: a.ms, ...a.trace }, 'request completed')
}
