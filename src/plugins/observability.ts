import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { redactUrl } from '../services/redact.js'
import type { Tracing } from '../observability/tracing.js'
import type { Metrics } from '../observability/metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
  }
}

/** The access line (nothing secret: no header, no body, keys in the URL redacted) and request metrics. */
async function observability (app: FastifyInstance, opts: { metrics: Metrics, tracing?: Tracing }): Promise<void> {
  const { metrics, tracing } = opts
  app.decorate('metrics', metrics)
  app.addHook('onResponse', (request, reply, done) => {
    // Read once: request.routeOptions builds a new object on every read.
    const route = request.routeOptions.url
    const { method } = request
    const status = reply.statusCode
    const ms = reply.elapsedTime
    metrics.observe(method, route, status, ms)
    const keyId = request.apiKeyId
    // The fields docs/reference/behaviour.md ("Logs") names: the key's id (never the key), the URL
    // redacted, the Error's code when the answer is one; then the request's trace while tracing is on.
    const line = { reqId: request.id, keyId: keyId === 0 ? undefined : keyId, method, route, url: redactUrl(request.originalUrl), status, code: request.failure?.error.code, ms: Math.round(ms * 100) / 100 }
    app.log.info(tracing === undefined ? line : { ...line, ...tracing.fieldsOf(request) }, 'request completed')
    done()
  })
}

export default fp(observability, { name: 'petstore-observability' })
