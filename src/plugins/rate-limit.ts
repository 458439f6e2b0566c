import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { ApiError } from '../errors.js'
import type { Metrics } from './metrics.js'

type Limiter = ReturnType<FastifyInstance['createRateLimit']>

declare module 'fastify' {
  interface FastifyInstance {
    /** The two limits; the authentication policy (auth.ts) applies them. */
    rateLimits: RateLimits
  }
}

/**
 * Two limits, both fixed windows counted by @fastify/rate-limit (in Redis when REDIS_URL is set, so
 * every instance shares them; in process memory otherwise):
 * - "key": requests per API key, checked right after authentication;
 * - "address": requests without a valid key per client address. It is counted only when
 *   authentication fails; once exceeded the address is refused with 429 before any key is even
 *   parsed, until its window ends, so a flood of bad keys costs one Map lookup per request.
 * Headers follow draft-ietf-httpapi-ratelimit-headers-10: RateLimit-Policy and RateLimit.
 */
export class RateLimits {
  private readonly blocked = new Map<string, number>()
  private lastRedisWarning = 0

  private constructor (
    private readonly keyLimit: Limiter | undefined,
    private readonly addressLimit: Limiter | undefined,
    private readonly keyPolicy: string,
    private readonly addressPolicy: string,
    private readonly metrics: Metrics,
    private readonly log: FastifyBaseLogger
  ) {}

  /** Registers @fastify/rate-limit on `app` (root scope) and connects to Redis when configured. */
  static async install (app: FastifyInstance, config: Readonly<Config>, metrics: Metrics): Promise<RateLimits> {
    const { max, anonMax, windowMs } = config.rateLimit
    let redis: Redis | undefined
    if (config.redisUrl !== undefined && (max > 0 || anonMax > 0)) {
      // Loaded only here: a process without REDIS_URL does not pay for ioredis at start (~50 ms).
      const { Redis: RedisClient } = await import('ioredis')
      // No offline queue: while Redis is away, checks fail at once (and are let through) instead of piling up.
      redis = new RedisClient(config.redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500 })
      redis.on('error', () => {}) // reported per failed check, below
      try {
        await redis.connect()
      } catch (err) {
        redis.disconnect()
        throw new Error(`REDIS_URL: cannot connect to Redis (${(err as Error).message})`)
      }
      const client = redis
      // disconnect, not quit: quit waits on a Redis that may be gone, and counters need no flush.
      app.addHook('onClose', async () => { client.disconnect() })
    }
    await app.register(fastifyRateLimit, {
      global: false,
      timeWindow: windowMs,
      nameSpace: 'petstore:ratelimit:',
      cache: 10000,
      ...(redis !== undefined ? { redis } : {})
    })
    const windowS = Math.ceil(windowMs / 1000)
    return new RateLimits(
      max > 0 ? app.createRateLimit({ max, timeWindow: windowMs, keyGenerator: (req) => `key:${req.apiKeyId}` }) : undefined,
      anonMax > 0 ? app.createRateLimit({ max: anonMax, timeWindow: windowMs, keyGenerator: (req) => `addr:${req.ip}` }) : undefined,
      `"key";q=${max};w=${windowS}`,
      `"address";q=${anonMax};w=${windowS}`,
      metrics,
      app.log
    )
  }

  /**
   * Before authentication: refuses at once an address that used up its failed-authentication
   * budget, unless the request carries a key already known valid (`knownKey`, asked only for a
   * blocked address and answered from memory): behind NAT or a proxy many clients share an
   * address, and one client guessing keys must not lock out the others, whose keys are known.
   * A key not known is refused without a store lookup, so a flood of guesses still costs nothing.
   */
  refuseBlockedAddress (request: FastifyRequest, reply: FastifyReply, knownKey: () => boolean): void {
    if (this.blocked.size === 0) return
    const until = this.blocked.get(request.ip)
    if (until === undefined) return
    const left = until - Date.now()
    if (left <= 0) {
      this.blocked.delete(request.ip)
      return
    }
    if (knownKey()) return
    reply.header('ratelimit-policy', this.addressPolicy)
    reply.header('ratelimit', `"address";r=0;t=${Math.ceil(left / 1000)}`)
    throw this.refuse('address', left)
  }

  /** After a failed authentication: counts it against the address; 429 once over the limit. */
  async countFailure (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (this.addressLimit === undefined) return
    const r = await this.check(this.addressLimit, request)
    if (r === undefined) return
    reply.header('ratelimit-policy', this.addressPolicy)
    reply.header('ratelimit', `"address";r=${r.remaining};t=${r.ttlInSeconds}`)
    if (r.isExceeded) {
      if (this.blocked.size >= 10000) this.blocked.clear()
      this.blocked.set(request.ip, Date.now() + r.ttl)
      throw this.refuse('address', r.ttl)
    }
  }

  /** After a successful authentication: counts the request against its API key; 429 once over the limit. */
  async countKeyUse (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (this.keyLimit === undefined) return
    const r = await this.check(this.keyLimit, request)
    if (r === undefined) return
    reply.header('ratelimit-policy', this.keyPolicy)
    reply.header('ratelimit', `"key";r=${r.remaining};t=${r.ttlInSeconds}`)
    if (r.isExceeded) throw this.refuse('key', r.ttl)
  }

  private async check (limiter: Limiter, request: FastifyRequest): Promise<{ remaining: number, ttl: number, ttlInSeconds: number, isExceeded: boolean } | undefined> {
    try {
      const r = await limiter(request)
      return r.isAllowed ? undefined : r
    } catch (err) {
      // Redis unreachable: let the request through (availability over strictness) and say so.
      this.metrics.storeErrors.inc({ store: 'redis' })
      const now = Date.now()
      if (now - this.lastRedisWarning > 10000) {
        this.lastRedisWarning = now
        this.log.warn({ err }, 'rate-limit store unavailable; requests are not being limited')
      }
      return undefined
    }
  }

  private refuse (scope: 'key' | 'address', ttlMs: number): ApiError {
    this.metrics.rateLimited.inc({ scope })
    const seconds = Math.max(1, Math.ceil(ttlMs / 1000))
    const message = scope === 'key'
      ? `rate limit of this API key exceeded; retry after ${seconds} s`
      : `too many requests without a valid API key from this address; retry after ${seconds} s`
    return new ApiError('rate_limited', message, { 'retry-after': String(seconds) })
  }
}

/**
 * The rate-limit plugin: registers @fastify/rate-limit, connects to Redis when REDIS_URL is set
 * (disconnected when the app closes; unreachable at start: the start fails naming REDIS_URL), and
 * decorates the app with `rateLimits`. It decides nothing by itself: the authentication policy
 * (auth.ts) says when each limit is checked and counted.
 */
async function rateLimitPlugin (app: FastifyInstance, opts: { config: Readonly<Config> }): Promise<void> {
  app.decorate('rateLimits', await RateLimits.install(app, opts.config, app.metrics))
}

export default fp(rateLimitPlugin, { name: 'petstore-rate-limit', dependencies: ['petstore-observability'] })
