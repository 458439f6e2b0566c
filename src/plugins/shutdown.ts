import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'

/**
 * Graceful shutdown, as the clients see it. Once `app.close()` starts, new requests are answered
 * 503 with Retry-After (Fastify's own `return503OnClosing` is off: ours is in the Error shape), and
 * every response finishing meanwhile ends its connection, so clients reconnect to another instance.
 * Idle keep-alive sockets are closed as soon as they go idle, so shutdown never waits for
 * KEEP_ALIVE_TIMEOUT_MS.
 */
async function shutdown (app: FastifyInstance): Promise<void> {
  let closing = false
  let sweep: NodeJS.Timeout | undefined
  app.addHook('preClose', (done) => {
    closing = true
    // server.close() closes the sockets idle at that instant; keep closing those that go idle
    // later (a keep-alive socket between two requests).
    sweep = setInterval(() => app.server.closeIdleConnections(), 100)
    sweep.unref()
    done()
  })
  app.addHook('onClose', (_app, done) => {
    clearInterval(sweep)
    done()
  })
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) {
      done()
      return
    }
    reply.header('connection', 'close')
    done(new ApiError('service_unavailable', 'the server is shutting down; retry on another instance', { 'retry-after': '1' }))
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
}

export default fp(shutdown, { name: 'petstore-shutdown' })
