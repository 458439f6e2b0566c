import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../config/index.js'
import { ApiError } from '../errors.js'

/**
 * Counts a request against one limit and rejects with the 429 once it is over; with
 * `{ increment: false }` it only reads the window, and rejects if that is already over.
 */
export type Limit = (request: FastifyRequest, reply: FastifyReply, opts?: { increment: boolean }) => Promise<void>

declare module 'fastify' {
  interface FastifyInstance {
    /** The two limits; the authentication policy (auth.ts) says when each is read and counted. */
    rateLimits: { key: Limit, address: Limit }
  }
}

const REFUSED = {
  key: (s: number) => `rate limit of this API key exceeded; retry after ${s} s`,
  address: (s: number) => `too many requests without a valid API key from this address; retry after ${s} s`
}

/** Connects first: an unreachable Redis at start is a start failure naming REDIS_URL. */
async function connectRedis (app: FastifyInstance, url: string): Promise<Redis> {
  // Loaded only here: a process without REDIS_URL does not load ioredis.
  const { Redis } = await import('ioredis')
  // No offline queue: while Redis is away, checks fail at once (and are let through) instead of piling up.
  const redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500 })
  redis.on('error', () => {}) // reported per failed check
  try {
    await redis.connect()
  } catch (err) {
    redis.disconnect()
    throw new Error(`REDIS_URL: cannot connect to Redis (${(err as Error).message})`)
  }
  // disconnect, not quit: quit waits on a Redis that may be gone, and counters need no flush.
  app.addHook('onClose', async () => { redis.disconnect() })
  return redis
}

/**
 * Two limits, fixed windows counted by @fastify/rate-limit: in Redis when REDIS_URL is set (every
 * instance shares them, timed by Redis), in process memory otherwise (the library's store):
 * - "key": requests per API key (RATE_LIMIT_MAX), counted right after authentication;
 * - "address": failed authentications per client address (RATE_LIMIT_ANON_MAX). Once over, the
 *   address is refused with 429 until its window ends, before any key is looked up.
 */
async function rateLimitPlugin (app: FastifyInstance, opts: { config: Readonly<Config> }): Promise<void> {
  const { redisUrl, rateLimit: { max, anonMax, windowMs } } = opts.config
  const redis = redisUrl !== undefined && (max > 0 || anonMax > 0) ? await connectRedis(app, redisUrl) : undefined
  await app.register(fastifyRateLimit, { global: false, timeWindow: windowMs, ...(redis === undefined ? {} : { redis, nameSpace: 'petstore:ratelimit:' }) })
  // Redis failing: one outage, logged when it goes, summarised while it stays away, and when it is back (outages.ts).
  // Counted once per request: its later checks meet the same outage.
  const reported = new WeakSet<FastifyRequest>()

  /**
   * One fixed-window limit of @fastify/rate-limit (app.createRateLimit). The library's own headers are
   * of an older draft; ours are draft-ietf-httpapi-ratelimit-headers-10's named policies, written from
   * its result: `RateLimit-Policy: "key";q=100;w=60` and `RateLimit: "key";r=99;t=60`.
   * A Redis that cannot answer lets the request through, uncounted and without headers (availability
   * over strictness).
   */
  const limit = (name: 'key' | 'address', quota: number, keyGenerator: (req: FastifyRequest) => string): Limit => {
    if (quota === 0) return async () => {}
    const policy = `"${name}";q=${quota};w=${Math.ceil(windowMs / 1000)}`
    const check = app.createRateLimit({ max: quota, timeWindow: windowMs, keyGenerator })
    return async (request, reply, count = { increment: true }) => {
      let r
      try {
        r = await check(request, count)
      } catch (err) {
        if (redis === undefined) throw err
        if (!reported.has(request)) {
          reported.add(request)
          app.metrics.storeErrors.inc({ store: 'redis' })
          app.outages.failed('redis', err, async () => await redis.ping())
        }
        return
      }
      if (redis !== undefined) app.outages.ok('redis')
      if (r.isAllowed || (!count.increment && !r.isExceeded)) return
      reply.header('ratelimit-policy', policy)
      reply.header('ratelimit', `"${name}";r=${r.remaining};t=${r.ttlInSeconds}`)
      if (!r.isExceeded) return
      app.metrics.rateLimited.inc({ scope: name })
      const seconds = Math.max(1, r.ttlInSeconds)
      throw new ApiError('rate_limited', REFUSED[name](seconds), { 'retry-after': String(seconds) })
    }
  }
  app.decorate('rateLimits', {
    key: limit('key', max, req => `key:${req.apiKeyId}`),
    address: limit('address', anonMax, req => `addr:${req.ip}`)
  })
}

export default fp(rateLimitPlugin, { name: 'petstore-rate-limit', dependencies: ['petstore-observability'] })
