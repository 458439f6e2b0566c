import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { refuseConnect } from './client-errors.js'

/**
 * Hardening at the edge of every request: `X-Content-Type-Options: nosniff` on every response,
 * 400 for an HTTP/1.1 request without Host (Node's own answer would be an empty 400; see
 * `requireHostHeader` in app.ts), and CONNECT answered 405 instead of a dropped connection.
 */
async function hardening (app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-content-type-options', 'nosniff')
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      reply.header('connection', 'close')
      done(new ApiError('bad_request', 'an HTTP/1.1 request needs a Host header'))
      return
    }
    done()
  })
  app.server.on('connect', refuseConnect)
  app.addHook('onClose', (_app, done) => {
    app.server.off('connect', refuseConnect)
    done()
  })
}

export default fp(hardening, { name: 'petstore-hardening' })
