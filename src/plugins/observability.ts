import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { accessLogger } from '../access-line.js'
import { redactUrl } from '../services/redact.js'
import type { TraceFields, Tracing } from '../tracing.js'
import type { Metrics } from './metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Prometheus counters of this app; plugins count what they refuse (rate limits, overload, store errors). */
    metrics: Metrics
    /**
     * Records a finished request: counted in the metrics (by method, route template, status and
     * latency in ms), and its access line written through the request's logger; `keyId` 0: no key;
     * `url` as received; `trace` its server span while tracing. The fast lane records the requests it
     * answers here too.
     */
    recordResponse: (log: FastifyBaseLogger, keyId: number, method: string, route: string | undefined, url: string, status: number, ms: number, trace?: TraceFields) => void
  }
}

/**
 * The access log and the request metrics: one `request completed` line per request, with what an
 * operator needs and nothing secret (no header, no body; keys in the URL redacted), and the request
 * counted by method, route template and status. Fastify's own request logging is off (app.ts).
 */
async function observability (app: FastifyInstance, opts: { metrics: Metrics, tracing?: Tracing }): Promise<void> {
  const { metrics, tracing } = opts
  app.decorate('metrics', metrics)
  const access = accessLogger(app.log)
  // The one place both Fastify's requests and the fast lane's are recorded: same counts, same line.
  const record = (log: FastifyBaseLogger, keyId: number, method: string, route: string | undefined, url: string, status: number, ms: number, trace?: TraceFields): void => {
    metrics.observe(method, route, status, ms)
    access(log, { keyId: keyId === 0 ? undefined : keyId, method, route, url: redactUrl(url), status, ms: Math.round(ms * 100) / 100, trace })
  }
  app.decorate('recordResponse', record)
  app.addHook('onResponse', (request, reply, done) => {
    // Read once: request.routeOptions builds a new object on every read.
    record(request.log, request.apiKeyId, request.method, request.routeOptions.url, request.originalUrl, reply.statusCode, reply.elapsedTime, tracing?.fieldsOf(request))
    done()
  })
}

export default fp(observability, { name: 'petstore-observability' })
