import fastifyCors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** Headers a browser client may read. */
const EXPOSED_HEADERS = ['Link', 'Location', 'ETag', 'Deprecation', 'Sunset', 'Retry-After', 'X-Request-Id', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed']

/**
 * CORS for the browser origins in CORS_ORIGINS (none: CORS off, no Access-Control headers and no
 * preflight route). Preflights are answered before authentication: they carry no credentials.
 */
async function cors (app: FastifyInstance, opts: { origins: readonly string[] }): Promise<void> {
  if (opts.origins.length === 0) return
  await app.register(fastifyCors, {
    origin: [...opts.origins],
    methods: ['GET', 'POST'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-None-Match', 'X-Request-Id'],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600
  })
}

export default fp(cors, { name: 'petstore-cors' })
