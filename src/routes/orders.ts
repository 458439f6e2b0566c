import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'
import { ErrorSchema } from '../schemas/common.js'

/** The spec names GET /store/orders but does not specify it: answer 501, clearly, after authentication. */
export default async function orderRoutes (app: FastifyInstance): Promise<void> {
  app.get('/store/orders', {
    schema: {
      operationId: 'listOrders',
      summary: 'Store orders (not implemented)',
      description: 'Named by the Petstore v1 interface but not specified by it: always 501 not_implemented.',
      tags: ['store'],
      response: { 401: ErrorSchema, 501: ErrorSchema }
    }
  }, async () => {
    throw new ApiError('not_implemented', 'GET /v1/store/orders is named by the Petstore v1 interface but not specified; it is not implemented')
  })
}
