import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import { JSON_TYPE } from '../http/media-types.js'
import { errorResponses, jsonResponse } from '../schemas/responses.js'

const IndexSchema = Type.Object({
  name: Type.Literal('Petstore', { description: 'The service.' }),
  links: Type.Object({
    docs: Type.Literal('/docs', { description: 'The docs page: every operation, with "Try it out".' }),
    openapi: Type.Literal('/openapi.json', { description: 'The OpenAPI 3.1 document (also /openapi.yaml).' }),
    api: Type.Literal('/v1', { description: 'The base of the API; its operations need `Authorization: Bearer <API_KEY>`.' }),
    health: Type.Literal('/healthz', { description: 'Liveness (readiness: /readyz).' })
  }, { additionalProperties: false, description: 'Where to go next, as paths on this server.' })
}, { additionalProperties: false, examples: [{ name: 'Petstore', links: { docs: '/docs', openapi: '/openapi.json', api: '/v1', health: '/healthz' } }] })

// One fixed body, sent as bytes: no serializer is compiled for it.
const INDEX = JSON.stringify({
  name: 'Petstore',
  links: { docs: '/docs', openapi: '/openapi.json', api: '/v1', health: '/healthz' }
} satisfies Static<typeof IndexSchema>)

/** GET /: a small index for whoever opens the server's address, pointing to the docs. No authentication. */
export default async function rootRoutes (app: FastifyInstance): Promise<void> {
  app.get('/', {
    schema: {
      operationId: 'index',
      summary: 'Index: links to the docs page, the OpenAPI document, the API and health',
      description: 'Outside /v1 and without authentication.',
      tags: ['index'],
      security: [],
      response: { 200: jsonResponse('Links to start from.', IndexSchema), ...errorResponses(['internal_error', 'service_unavailable']) }
    }
  }, async (_request, reply) => reply.type(JSON_TYPE).send(INDEX))
}
