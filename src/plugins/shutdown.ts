import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Step one of a rolling restart (SIGTERM): for `ms`, readiness answers 503 so load balancers take
     * the instance out of rotation, while every request that still arrives is served as usual (its
     * answer ending the connection, so the client reconnects through the balancer). Resolves when
     * the time is up; the caller then closes the app.
     */
    drain: (ms: number) => Promise<void>
    /** True from drain() or close() on: readiness answers 503. */
    readonly draining: boolean
  }
}

/**
 * Graceful shutdown, as the clients see it. While draining (above), everything is served and
 * readiness is 503. Once `app.close()` starts, new requests are answered 503 with Retry-After
 * (Fastify's own `return503OnClosing` is off: ours is in the Error shape), and every response
 * finishing meanwhile ends its connection, so clients reconnect to another instance. Idle keep-alive
 * sockets are closed as soon as they go idle, so shutdown never waits for KEEP_ALIVE_TIMEOUT_MS.
 */
async function shutdown (app: FastifyInstance): Promise<void> {
  let draining = false
  let closing = false
  let sweep: NodeJS.Timeout | undefined
  app.decorate('draining', { getter: () => draining || closing })
  app.decorate('drain', async (ms: number) => {
    draining = true
    await new Promise(resolve => setTimeout(resolve, ms))
  })
  app.addHook('preClose', (done) => {
    closing = true
    // server.close() closes the sockets idle at that instant; keep closing those that go idle
    // later (a keep-alive socket between two requests).
    sweep = setInterval(() => app.server.closeIdleConnections(), 100)
    sweep.unref()
    done()
  })
  app.addHook('onClose', async () => { clearInterval(sweep) })
  // Its Connection: close is written by the onSend hook below.
  app.addHook('onRequest', (_request, _reply, done) => {
    if (!closing) done()
    else done(new ApiError('service_unavailable', 'the server is shutting down; retry on another instance', { 'retry-after': '1' }))
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining || closing) reply.header('connection', 'close')
    done(null, payload)
  })
}

export default fp(shutdown, { name: 'petstore-shutdown' })
