import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyInstance } from 'fastify'
import { Type, type Static } from 'typebox'
import { varyOn } from '../http/representations.js'
import { JSON_TYPE } from '../http/media-types.js'
import { errorResponses, Headers } from '../schemas/responses.js'

const LINKS = { docs: '/docs', openapi: '/openapi.json', api: '/v1', health: '/healthz', ready: '/readyz' } as const

const IndexSchema = Type.Object({
  name: Type.Literal('Petstore', { description: 'The service.' }),
  links: Type.Object({
    docs: Type.Literal(LINKS.docs, { description: 'The docs page: every operation, with "Try it out".' }),
    openapi: Type.Literal(LINKS.openapi, { description: 'The OpenAPI 3.1 document (also /openapi.yaml).' }),
    api: Type.Literal(LINKS.api, { description: 'The base of the API; its operations need `Authorization: Bearer <API_KEY>`.' }),
    health: Type.Literal(LINKS.health, { description: 'Liveness.' }),
    ready: Type.Literal(LINKS.ready, { description: 'Readiness: 200 while this instance takes requests and its store answers.' })
  }, { additionalProperties: false, description: 'Where to go next, as paths on this server.' })
}, { additionalProperties: false, examples: [{ name: 'Petstore', links: LINKS }] })

// Both bodies are fixed: sent as bytes, no serializer compiled for them.
const INDEX = JSON.stringify({ name: 'Petstore', links: LINKS } satisfies Static<typeof IndexSchema>)
const HTML_TYPE = 'text/html; charset=utf-8'
const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Petstore</title></head>
<body>
<h1>Petstore</h1>
<p>The Petstore v1 API. Its operations are under <code>${LINKS.api}</code> and need <code>Authorization: Bearer &lt;API_KEY&gt;</code>.</p>
<ul>
<li><a href="${LINKS.docs}">The docs page</a>: every operation, with "Try it out"</li>
<li><a href="${LINKS.openapi}">The OpenAPI document</a> (also <a href="/openapi.yaml">YAML</a>)</li>
<li><a href="${LINKS.health}">Health</a> and <a href="${LINKS.ready}">readiness</a></li>
</ul>
</body>
</html>
`
/** The media types GET / answers, the first preferred when a client accepts both equally (`*\/*`). */
const OFFERED = ['application/json', 'text/html']

/**
 * GET /: an index for whoever opens the server's address. JSON for API clients (and for any Accept
 * that does not prefer HTML, `*\/*` included); a small HTML page for a browser, whose Accept ranks
 * text/html first. Both link the docs page, the document, health and readiness. No authentication.
 */
export default async function rootRoutes (app: FastifyInstance): Promise<void> {
  app.get('/', {
    schema: {
      operationId: 'index',
      summary: 'Index: links to the docs page, the OpenAPI document, the API, health and readiness',
      description: 'Outside /v1 and without authentication. JSON unless the `Accept` header prefers `text/html` (a browser), which gets the same links as a small HTML page.',
      tags: ['index'],
      security: [],
      response: {
        200: {
          description: 'Links to start from.',
          headers: { 'X-Request-Id': Headers.requestId, Vary: Headers.vary },
          content: {
            'application/json': { schema: IndexSchema },
            'text/html': { schema: Type.String({ description: 'The same links as an HTML page.' }) }
          }
        },
        ...errorResponses(['internal_error', 'service_unavailable'])
      }
    }
  }, async (request, reply) => {
    varyOn(reply, 'Accept')
    const accept = request.headers.accept
    if (accept !== undefined && negotiate(accept, OFFERED) === 'text/html') return reply.type(HTML_TYPE).send(PAGE)
    return reply.type(JSON_TYPE).send(INDEX)
  })
}
