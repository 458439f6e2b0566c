import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { accessLogger } from '../access-line.js'
import { redactUrl } from '../services/redact.js'
import type { Metrics } from './metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Prometheus counters of this app; plugins count what they refuse (rate limits, overload, store errors). */
    metrics: Metrics
  }
}

/**
 * The access log and the request metrics: one `request completed` line per request, with what an
 * operator needs and nothing secret (no header, no body; keys in the URL redacted), and the request
 * counted by method, route template and status. Fastify's own request logging is off (app.ts).
 */
async function observability (app: FastifyInstance, opts: { metrics: Metrics }): Promise<void> {
  const { metrics } = opts
  app.decorate('metrics', metrics)
  const access = accessLogger(app.log)
  app.addHook('onResponse', (request, reply, done) => {
    // Read once: request.routeOptions builds a new object on every read.
    const route = request.routeOptions.url
    const ms = reply.elapsedTime
    const status = reply.statusCode
    metrics.observe(request.method, route, status, ms)
    access(request.log, {
      keyId: request.apiKeyId === 0 ? undefined : request.apiKeyId,
      method: request.method,
      route,
      url: redactUrl(request.originalUrl),
      status,
      ms: Math.round(ms * 100) / 100
    })
    done()
  })
}

export default fp(observability, { name: 'petstore-observability' })
