import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ApiError } from '../errors.js'
import { ErrorSchema } from '../schemas/common.js'
import type { Store } from '../store/store.js'

const HealthSchema = Type.Object({ status: Type.Literal('ok', { description: 'Always ok.' }) }, { additionalProperties: false })

/** Liveness and readiness, outside /v1 and without authentication. */
export default async function healthRoutes (app: FastifyInstance, opts: { store: Store }): Promise<void> {
  app.get('/healthz', {
    schema: { summary: 'Liveness: 200 while the process is up', tags: ['health'], security: [], response: { 200: HealthSchema } }
  }, async () => ({ status: 'ok' as const }))

  app.get('/readyz', {
    schema: { summary: 'Readiness: 200 when the store answers, else 503', tags: ['health'], security: [], response: { 200: HealthSchema, 503: ErrorSchema } }
  }, async (request) => {
    try {
      await opts.store.ping()
    } catch (err) {
      request.log.warn({ err }, 'readiness check failed')
      throw new ApiError('service_unavailable', 'the store does not answer', { 'retry-after': '1' })
    }
    return { status: 'ok' as const }
  })
}
