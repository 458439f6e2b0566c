import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'
import { AUTHORIZATION_CODES, errorResponses, RateLimitHeaders } from '../schemas/responses.js'

/** The spec names GET /store/orders but does not specify it: answer 501, clearly, after authentication. */
export default async function orderRoutes (app: FastifyInstance): Promise<void> {
  app.get('/store/orders', {
    // A read of the store; the interface names no scope of its own for orders.
    config: { scope: 'pets:read' },
    schema: {
      operationId: 'listOrders',
      summary: 'Store orders (not implemented)',
      description: 'Named by the Petstore v1 interface but not specified by it: always 501 not_implemented.',
      tags: ['store'],
      response: errorResponses([...AUTHORIZATION_CODES, 'not_implemented', 'internal_error', 'service_unavailable'], RateLimitHeaders)
    }
  }, async () => {
    throw new ApiError('not_implemented', 'GET /v1/store/orders is named by the Petstore v1 interface but not specified; it is not implemented')
  })
}
