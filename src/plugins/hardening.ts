import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { connectAsRequest } from './client-errors.js'
import { repeatedSingleton } from './repeated-headers.js'

/**
 * Hardening at the edge of every request: `X-Content-Type-Options: nosniff` on every response,
 * 400 for an HTTP/1.1 request without Host (Node's own answer would be an empty 400; see
 * `requireHostHeader` in app.ts) or with a repeated Host, Authorization or Content-Type (see
 * repeated-headers.ts), and CONNECT routed like any other method instead of a dropped connection.
 */
/** Browsers take a response's Content-Type as it is, never guessing another from the body. */
export const NOSNIFF = 'nosniff'

/** What is wrong at the edge of a request (a missing or repeated singleton header), or undefined; the fast lane asks it too. */
export function edgeProblem (req: IncomingMessage): string | undefined {
  if (req.headers.host === undefined && req.httpVersion === '1.1') return 'an HTTP/1.1 request needs a Host header'
  const repeated = repeatedSingleton(req.rawHeaders)
  return repeated === undefined ? undefined : `the ${repeated} header must be sent once`
}

async function hardening (app: FastifyInstance): Promise<void> {
  app.checkOnArrival((request, reply) => {
    reply.header('x-content-type-options', NOSNIFF)
    const problem = edgeProblem(request.raw)
    if (problem !== undefined) {
      reply.header('connection', 'close')
      throw new ApiError('bad_request', problem)
    }
  })
  const onConnect = connectAsRequest(app)
  app.server.on('connect', onConnect)
  app.addHook('onClose', (_app, done) => {
    app.server.off('connect', onConnect)
    done()
  })
}

export default fp(hardening, { name: 'petstore-hardening', dependencies: ['petstore-request-checks'] })
