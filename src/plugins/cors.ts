import fastifyCors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * Headers a browser client may read. The three lists are given to the library as the header values
 * themselves: an array it would join again for every response.
 */
const EXPOSED_HEADERS = ['Link', 'Location', 'ETag', 'Deprecation', 'Sunset', 'Retry-After', 'X-Request-Id', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed'].join(', ')
const METHODS = ['GET', 'POST'].join(', ')
const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-None-Match', 'X-Request-Id'].join(', ')

/**
 * CORS for the browser origins in CORS_ORIGINS (none: CORS off, no Access-Control headers and no
 * preflight route). Preflights are answered before authentication: they carry no credentials. The
 * asterisk-form target (`OPTIONS *`) is about the server, never a preflight: CORS is off for it
 * (the errors plugin answers it).
 */
async function cors (app: FastifyInstance, opts: { origins: readonly string[] }): Promise<void> {
  if (opts.origins.length === 0) return
  const options = {
    origin: [...opts.origins],
    methods: METHODS,
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600
  }
  const off = { origin: false }
  await app.register(fastifyCors, {
    delegator: (request, callback) => { callback(null, request.url === '*' ? off : options) }
  })
}

export default fp(cors, { name: 'petstore-cors' })
