import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Store } from '../store/store.js'

interface RouteSeries { requests: Counter.Internal, duration: Histogram.Internal<string> }
type ReadCacheKind = 'pet' | 'page'

/**
 * The Prometheus metrics of one app. A registry per app (not prom-client's global one), so several
 * apps in one process (tests) keep separate counts. Served on a listener of its own (buildMetricsApp).
 */
export class Metrics {
  readonly registry = new Registry()
  private readonly requests: Counter<string>
  private readonly duration: Histogram<string>
  readonly rateLimited: Counter<'scope'>
  readonly overloaded: Counter<string>
  readonly storeErrors: Counter<'store'>
  readonly getPetCalls: Counter<'key_id'>
  /** Read cache lookups (services/pet-reads.ts), children bound once so a lookup costs one increment. */
  readonly readCache: Record<ReadCacheKind, { hits: Counter.Internal, misses: Counter.Internal }>
  private readCacheSize: () => { entries: number, bytes: number } = () => ({ entries: 0, bytes: 0 })
  // Children by "method route status": one map lookup per request instead of prom-client's label hashing.
  private readonly series = new Map<string, RouteSeries>()

  constructor (store: Pick<Store, 'poolStats'>, opts: { processMetrics?: boolean } = {}) {
    const registers = [this.registry]
    this.requests = new Counter({ name: 'petstore_http_requests_total', help: 'HTTP requests answered, by method, route template and status.', labelNames: ['method', 'route', 'status'], registers })
    this.duration = new Histogram({
      name: 'petstore_http_request_duration_seconds',
      help: 'Time from receiving a request to finishing its response, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers
    })
    this.rateLimited = new Counter({ name: 'petstore_rate_limited_total', help: 'Requests refused with 429, by limit: key (per API key) or address (failed authentication per client address).', labelNames: ['scope'], registers })
    this.overloaded = new Counter({ name: 'petstore_overload_rejections_total', help: 'Requests shed with 503 because the event loop lagged past EVENT_LOOP_MAX_DELAY_MS.', registers })
    this.storeErrors = new Counter({ name: 'petstore_store_errors_total', help: 'Failures to reach a backing store: the database (sqlite/postgres) or the rate-limit Redis.', labelNames: ['store'], registers })
    this.getPetCalls = new Counter({ name: 'petstore_deprecated_getpet_calls_total', help: 'Calls to the deprecated getPet (GET /v1/pets/{petId}) by API key id: who must migrate before the sunset.', labelNames: ['key_id'], registers })
    const hits = new Counter({ name: 'petstore_read_cache_hits_total', help: 'getPet (kind=pet) and listPets (kind=page) answered from the read cache.', labelNames: ['kind'], registers })
    const misses = new Counter({ name: 'petstore_read_cache_misses_total', help: 'getPet (kind=pet) and listPets (kind=page) that had to ask the store.', labelNames: ['kind'], registers })
    this.readCache = {
      pet: { hits: hits.labels('pet'), misses: misses.labels('pet') },
      page: { hits: hits.labels('page'), misses: misses.labels('page') }
    }
    const size = () => this.readCacheSize()
    // eslint-disable-next-line no-new
    new Gauge({ name: 'petstore_read_cache_entries', help: 'Representations held by the read cache.', registers, collect () { this.set(size().entries) } })
    // eslint-disable-next-line no-new
    new Gauge({ name: 'petstore_read_cache_bytes', help: 'Memory the read cache accounts for (bodies plus a fixed overhead per entry), at most READ_CACHE_MAX_MB.', registers, collect () { this.set(size().bytes) } })
    if (store.poolStats !== undefined) {
      const stats = store.poolStats.bind(store)
      // eslint-disable-next-line no-new
      new Gauge({
        name: 'petstore_store_pool_connections',
        help: 'Database connection pool: total and idle connections, and callers waiting for one.',
        labelNames: ['state'],
        registers,
        collect () {
          const s = stats()
          this.set({ state: 'total' }, s.total)
          this.set({ state: 'idle' }, s.idle)
          this.set({ state: 'waiting' }, s.waiting)
        }
      })
    }
    if (opts.processMetrics === true) collectDefaultMetrics({ register: this.registry, prefix: 'petstore_' })
  }

  /** Where the read cache gauges read its size. */
  watchReadCache (size: () => { entries: number, bytes: number }): void {
    this.readCacheSize = size
  }

  /** Counts a finished request (onResponse). */
  observe (request: FastifyRequest, reply: FastifyReply): void {
    const route = request.routeOptions.url ?? 'unmatched'
    const status = reply.statusCode
    const id = `${request.method} ${route} ${status}`
    let s = this.series.get(id)
    if (s === undefined) {
      const labels = { method: request.method, route, status: String(status) }
      s = { requests: this.requests.labels(labels), duration: this.duration.labels(labels) }
      this.series.set(id, s)
    }
    s.requests.inc()
    s.duration.observe(reply.elapsedTime / 1000)
  }
}

/** GET /metrics (Prometheus text format) on a listener separate from the API, so it is never public by accident. */
export function buildMetricsApp (metrics: Metrics): FastifyInstance {
  const app = Fastify({ logger: false })
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType)
    return await metrics.registry.metrics()
  })
  return app
}
