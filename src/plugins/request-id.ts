import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Request ids: the client's X-Request-Id when well-formed, else a UUID (Fastify's genReqId); echoed on
 * every response and bound to every log line of the request (pino's `reqId`). Fastify's
 * `requestIdHeader` stays off (app.ts): with it, any X-Request-Id would be taken as-is, forged log
 * text included.
 */
async function requestId (app: FastifyInstance): Promise<void> {
  app.setGenReqId((req) => {
    const given = req.headers['x-request-id']
    // An id that looks like an API key is replaced: a key pasted into the wrong header must not reach the logs.
    return typeof given === 'string' && REQUEST_ID.test(given) && !given.includes('psk_') ? given : randomUUID()
  })
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
}

export default fp(requestId, { name: 'petstore-request-id' })
