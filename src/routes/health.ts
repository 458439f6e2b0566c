import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import { ApiError, StoreGoneError, StoreOpeningError } from '../errors.js'
import { JSON_TYPE } from '../http/media-types.js'
import { errorResponses, jsonResponse } from '../schemas/responses.js'
import type { Store } from '../store/store.js'

const HealthSchema = Type.Object({ status: Type.Literal('ok', { description: 'Always ok.' }) }, { additionalProperties: false })
// The one body both send, as bytes: no serializer is compiled (or loaded) for it, so a start's first
// requests (/healthz, then /readyz) need none.
const OK = JSON.stringify({ status: 'ok' } satisfies Static<typeof HealthSchema>)

/** Liveness and readiness, outside /v1 and without authentication. */
export default async function healthRoutes (app: FastifyInstance, opts: { store: Store }): Promise<void> {
  app.get('/healthz', {
    schema: {
      operationId: 'liveness',
      summary: 'Liveness: 200 while the process is up',
      description: 'Outside /v1 and without authentication. 503 only while the server is shutting down.',
      tags: ['health'],
      security: [],
      response: { 200: jsonResponse('The process is up.', HealthSchema), ...errorResponses(['internal_error', 'service_unavailable']) }
    }
  }, async (_request, reply) => reply.type(JSON_TYPE).send(OK))

  app.get('/readyz', {
    schema: {
      operationId: 'readiness',
      summary: 'Readiness: 200 when the store answers, else 503',
      description: 'Outside /v1 and without authentication. Load balancers take an instance out of rotation on 503, which it also answers while it starts (a SQLite store is checked before it is served; /healthz already answers 200) and from the moment shutdown begins (SIGTERM: for `SHUTDOWN_DRAIN_MS` while every other request is still served).',
      tags: ['health'],
      security: [],
      response: { 200: jsonResponse('The store answers.', HealthSchema), ...errorResponses(['internal_error', 'service_unavailable', 'store_gone']) }
    }
  }, async (_request, reply) => {
    // Shutting down (SIGTERM): out of rotation first, while requests are still served.
    if (app.draining) throw new ApiError('service_unavailable', 'the server is shutting down; retry on another instance', { 'retry-after': '1' })
    // Starting: the store is checked and migrated before it is served (plugins/store-opening.ts).
    if (app.storeOpening) throw new StoreOpeningError()
    try {
      await opts.store.ping()
    } catch (err) {
      if (err instanceof StoreGoneError) throw new ApiError('store_gone', err.message, { 'retry-after': '1' })
      // An outage of the store, logged with the requests it fails (outages.ts), not once per probe.
      app.outages.failed(opts.store.kind, err, async () => { await opts.store.ping() })
      throw new ApiError('service_unavailable', 'the store does not answer', { 'retry-after': '1' })
    }
    app.outages.ok(opts.store.kind)
    return reply.type(JSON_TYPE).send(OK)
  })
}
