import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config/index.js'
import { ApiError } from '../errors.js'
import type { Metrics } from '../observability/metrics.js'
import type { Outages } from '../logging/outages.js'
import { MemoryWindows, type WindowCount } from '../http/rate-windows.js'
import type { Clock } from '../runtime/clock.js'

/** A limit's answer for one request: what is left in the window, when it ends (ms), whether this request is over. */
interface Verdict { remaining: number, ttl: number, exceeded: boolean }

/** Counts one request against a limit: at once in memory; a Promise in Redis, undefined when Redis could not answer. */
type Count = (request: FastifyRequest) => Verdict | Promise<Verdict | undefined>

declare module 'fastify' {
  interface FastifyInstance {
    /** The two limits; the authentication policy (auth.ts) applies them. */
    rateLimits: RateLimits
  }
}

/**
 * Two limits, both fixed windows, counted in Redis by @fastify/rate-limit when REDIS_URL is set (so
 * every instance shares them), in process memory otherwise (rate-windows.ts, synchronously):
 * - "key": requests per API key, checked right after authentication;
 * - "address": requests without a valid key per client address. It is counted only when
 *   authentication fails; once exceeded the address is refused with 429 before any key is even
 *   parsed, until its window ends, so a flood of bad keys costs one Map lookup per request.
 * Headers follow draft-ietf-httpapi-ratelimit-headers-10: RateLimit-Policy and RateLimit.
 * In memory, windows and address blocks follow the app's clock. In Redis a window is a key's PEXPIRE,
 * timed by Redis's clock (the library's store takes no time): shared windows need one clock for
 * every instance, and Redis is the one they share.
 */
export class RateLimits {
  private readonly blocked = new Map<string, number>()
  /** When the last of the address blocks ends (ms since epoch): none is in force from then on. */
  private blockedUntil = 0
  private keyMax = 0

  private keyLimit: Count | undefined
  private addressLimit: Count | undefined
  /** The per-key windows when counted in memory; undefined with Redis or no limit. */
  private keyWindows: MemoryWindows | undefined
  /** Whether every count is made in memory (or not at all): false with Redis. */
  private inMemory = true

  private constructor (
    private readonly keyPolicy: string,
    private readonly addressPolicy: string,
    private readonly metrics: Metrics,
    readonly outages: Outages,
    private readonly now: Clock
  ) {}

  /** Sets up the counting: in memory, or in Redis through @fastify/rate-limit (connected here). */
  static async install (app: FastifyInstance, config: Readonly<Config>, metrics: Metrics, now: Clock): Promise<RateLimits> {
    const { max, anonMax, windowMs } = config.rateLimit
    const windowS = Math.ceil(windowMs / 1000)
    const keyOf = (req: FastifyRequest): string => keyWindow(req.apiKeyId)
    const addressOf = (req: FastifyRequest): string => `addr:${req.ip}`
    const limits: RateLimits = new RateLimits(`"key";q=${max};w=${windowS}`, `"address";q=${anonMax};w=${windowS}`, metrics, app.outages, now)
    if (config.redisUrl !== undefined && (max > 0 || anonMax > 0)) {
      limits.inMemory = false
      const count = await redisCounting(app, config.redisUrl, windowMs, (err, probe) => limits.redisFailed(err, probe), () => limits.outages.ok('redis'))
      limits.keyLimit = max > 0 ? count(max, keyOf) : undefined
      limits.addressLimit = anonMax > 0 ? count(anonMax, addressOf) : undefined
    } else {
      limits.keyWindows = max > 0 ? new MemoryWindows(windowMs) : undefined
      limits.keyMax = max
      limits.keyLimit = limits.keyWindows === undefined ? undefined : memoryCounting(max, limits.keyWindows, keyOf, now)
      limits.addressLimit = anonMax > 0 ? memoryCounting(anonMax, new MemoryWindows(windowMs), addressOf, now) : undefined
    }
    return limits
  }

  /**
   * Before authentication: refuses at once an address that used up its failed-authentication
   * budget, unless the request carries a key already known valid (`knownKey`, asked only for a
   * blocked address and answered from memory): behind NAT or a proxy many clients share an
   * address, and one client guessing keys must not lock out the others, whose keys are known.
   * A key not known is refused without a store lookup, so a flood of guesses still costs nothing.
   */
  refuseBlockedAddress (request: FastifyRequest, reply: FastifyReply, knownKey: (request: FastifyRequest) => boolean): void {
    if (this.blocked.size === 0) return
    const until = this.blocked.get(request.ip)
    if (until === undefined) return
    const left = until - this.now()
    if (left <= 0) {
      this.blocked.delete(request.ip)
      return
    }
    if (knownKey(request)) return
    limitHeaders(reply, this.addressPolicy, 'address', 0, left)
    throw this.refuse('address', left)
  }

  /**
   * After a failed authentication: counts it against the address; throws (or rejects with) the 429
   * once over the limit. Synchronous unless counted in Redis.
   */
  countFailure (request: FastifyRequest, reply: FastifyReply): void | Promise<void> {
    if (this.addressLimit === undefined) return
    const c = this.addressLimit(request)
    if (c instanceof Promise) return c.then(v => { this.failureCounted(request, reply, v) })
    this.failureCounted(request, reply, c)
  }

  /**
   * After a successful authentication: counts the request against its API key; throws (or rejects
   * with) the 429 once over the limit. Synchronous unless counted in Redis.
   */
  countKeyUse (request: FastifyRequest, reply: FastifyReply): void | Promise<void> {
    if (this.keyLimit === undefined) return
    const c = this.keyLimit(request)
    if (c instanceof Promise) return c.then(v => { this.keyUseCounted(reply, v) })
    this.keyUseCounted(reply, c)
  }

  private failureCounted (request: FastifyRequest, reply: FastifyReply, v: Verdict | undefined): void {
    if (v === undefined) return
    limitHeaders(reply, this.addressPolicy, 'address', v.remaining, v.ttl)
    if (v.exceeded) {
      if (this.blocked.size >= 10000) this.blocked.clear()
      const until = this.now() + v.ttl
      this.blocked.set(request.ip, until)
      if (until > this.blockedUntil) this.blockedUntil = until
      throw this.refuse('address', v.ttl)
    }
  }

  private keyUseCounted (reply: FastifyReply, v: Verdict | undefined): void {
    if (v === undefined) return
    limitHeaders(reply, this.keyPolicy, 'key', v.remaining, v.ttl)
    if (v.exceeded) throw this.refuse('key', v.ttl)
  }

  /**
   * Whether a request with this valid key gets through these limits at once, decided with no side
   * effect: the limits are counted in memory (a Redis count is asynchronous), no address block is in
   * force (refuseBlockedAddress decides those, by the request's address), and this request would not
   * be over the key's limit (countKeyUse answers the 429). Blocks that have all ended do not count:
   * countAtOnce forgets them.
   */
  admitsAtOnce (keyId: number, now: number): boolean {
    if (!this.inMemory || (this.blocked.size > 0 && now < this.blockedUntil)) return false
    return this.keyWindows === undefined || this.keyWindows.peek(keyWindow(keyId), now).current <= this.keyMax
  }

  /** For a request admitsAtOnce let through: counts it against its key and sets the headers countKeyUse sets. */
  countAtOnce (keyId: number, now: number, reply: FastifyReply): void {
    // Every block has ended: forget them all, as refuseBlockedAddress forgets each when its address comes back.
    if (this.blocked.size > 0) this.blocked.clear()
    if (this.keyWindows === undefined) return
    const v = verdict(this.keyMax, this.keyWindows.hit(keyWindow(keyId), now))
    limitHeaders(reply, this.keyPolicy, 'key', v.remaining, v.ttl)
  }

  /**
   * Redis unreachable for a count: the request is let through (availability over strictness), and
   * that is said: once when Redis goes, in a summary while it stays away, once when it is back (outages.ts).
   */
  redisFailed (err: unknown, probe: () => Promise<unknown>): void {
    this.metrics.storeErrors.inc({ store: 'redis' })
    this.outages.failed('redis', err, probe)
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
 * The window of an API key's requests. Each key's name is made once: a name made per request is a
 * new string, allocated and then hashed again by every Map lookup it is used for.
 */
const keyWindowNames = new Map<number, string>()
function keyWindow (keyId: number): string {
  let name = keyWindowNames.get(keyId)
  if (name === undefined) {
    if (keyWindowNames.size >= 10000) keyWindowNames.clear()
    name = `key:${keyId}`
    keyWindowNames.set(keyId, name)
  }
  return name
}

/** The one place the RateLimit-Policy and RateLimit headers are set: the limit's policy, what is left, and the seconds until its window ends. */
function limitHeaders (reply: FastifyReply, policy: string, limit: 'key' | 'address', remaining: number, ttlMs: number): void {
  reply.header('ratelimit-policy', policy)
  reply.header('ratelimit', `"${limit}";r=${remaining};t=${Math.ceil(ttlMs / 1000)}`)
}

/** A window's count against a limit of `max`. */
function verdict (max: number, w: WindowCount): Verdict {
  return { remaining: Math.max(0, max - w.current), ttl: w.ttl, exceeded: w.current > max }
}

/** Counting in process memory (rate-windows.ts): synchronous, one Map lookup per request. */
function memoryCounting (max: number, windows: MemoryWindows, id: (req: FastifyRequest) => string, now: Clock): Count {
  return (req) => verdict(max, windows.hit(id(req), now()))
}

/**
 * Counting in Redis, shared by every instance, by @fastify/rate-limit (its Redis store, one script
 * per check). Connects first: an unreachable Redis at start is a start failure naming REDIS_URL.
 */
async function redisCounting (app: FastifyInstance, url: string, windowMs: number, failed: (err: unknown, probe: () => Promise<unknown>) => void, answered: () => void): Promise<(max: number, id: (req: FastifyRequest) => string) => Count> {
  // Loaded only here: a process without REDIS_URL does not pay for ioredis and the library at start.
  const [{ Redis }, { default: fastifyRateLimit }] = await Promise.all([import('ioredis'), import('@fastify/rate-limit')])
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
  await app.register(fastifyRateLimit, { global: false, timeWindow: windowMs, nameSpace: 'petstore:ratelimit:', redis })
  const probe = async (): Promise<unknown> => await redis.ping()
  return (max, id) => {
    const limiter = app.createRateLimit({ max, timeWindow: windowMs, keyGenerator: id })
    return async (req) => {
      try {
        const r = await limiter(req)
        answered()
        return r.isAllowed ? undefined : { remaining: r.remaining, ttl: r.ttl, exceeded: r.isExceeded }
      } catch (err) {
        failed(err, probe)
        return undefined
      }
    }
  }
}

/**
 * The rate-limit plugin: connects to Redis when REDIS_URL is set (disconnected when the app closes;
 * unreachable at start: the start fails naming REDIS_URL), and decorates the app with `rateLimits`.
 * It decides nothing by itself: the authentication policy (auth.ts) says when each limit is checked
 * and counted.
 */
async function rateLimitPlugin (app: FastifyInstance, opts: { config: Readonly<Config>, now: Clock }): Promise<void> {
  app.decorate('rateLimits', await RateLimits.install(app, opts.config, app.metrics, opts.now))
}

export default fp(rateLimitPlugin, { name: 'petstore-rate-limit', dependencies: ['petstore-observability'] })
