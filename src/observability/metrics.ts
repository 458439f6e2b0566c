import Fastify, { type FastifyInstance } from 'fastify'
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import { collectDefaultMetrics, Counter, type CounterConfiguration, Gauge, type GaugeConfiguration, Histogram, Registry } from 'prom-client'
import { isPooled, namesStatements } from '../store/store.js'

const LOOP_DELAY_GAUGES = [
  ['min', 'The minimum recorded event loop delay.', h => h.min],
  ['max', 'The maximum recorded event loop delay.', h => h.max],
  ['mean', 'The mean of the recorded event loop delays.', h => h.mean],
  ['stddev', 'The standard deviation of the recorded event loop delays.', h => h.stddev],
  ['p50', 'The 50th percentile of the recorded event loop delays.', h => h.percentile(50)],
  ['p90', 'The 90th percentile of the recorded event loop delays.', h => h.percentile(90)],
  ['p99', 'The 99th percentile of the recorded event loop delays.', h => h.percentile(99)]
] as const satisfies ReadonlyArray<readonly [string, string, (h: IntervalHistogram) => number]>

/**
 * The Prometheus metrics of one app, as prom-client metrics in a registry of its own (several apps
 * share a test process). Values the app holds elsewhere (read-cache size, the store's pool, dropped
 * log lines) are read when scraped, by the metric's collect(). One part is our own: the event-loop
 * delay gauges replace prom-client's default ones, whose values before the first sample are false
 * (in the constructor; its test fails with prom-client's).
 */
export class Metrics {
  /** The registry of these metrics: its metrics() is the /metrics text, read at that call. */
  readonly registry = new Registry()

  private readonly requests = this.counter({
    name: 'petstore_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const
  })

  readonly rateLimited = this.counter({
    name: 'petstore_rate_limited_total',
    help: 'Requests refused with 429, by limit: key (per API key) or address (failed authentication per client address).',
    labelNames: ['scope'] as const
  })

  /** By reason only: never a key, a hash or an id. */
  readonly authRefusals = this.counter({
    name: 'petstore_auth_refusals_total',
    help: 'Requests refused by authentication or authorization, by reason: missing (no bearer key), unknown (not a key issued here, or malformed), ' +
      'revoked, expired (401), insufficient_scope (403: a valid key without the operation\'s scope).',
    labelNames: ['reason'] as const
  })

  readonly overloaded = this.counter({
    name: 'petstore_overload_rejections_total',
    help: 'Requests shed with 503 because the event loop lagged past EVENT_LOOP_MAX_DELAY_MS.'
  })

  readonly storeErrors = this.counter({
    name: 'petstore_store_errors_total',
    help: 'Failures to reach a backing store: the database (sqlite/postgres) or the rate-limit Redis.',
    labelNames: ['store'] as const
  })

  private readonly getPetCalls = this.counter({
    name: 'petstore_deprecated_getpet_calls_total',
    help: 'Calls to the deprecated getPet (GET /v1/pets/{petId}) by API key id: who must migrate before the sunset.',
    labelNames: ['key_id'] as const
  })

  private readonly readCacheHits = this.counter({
    name: 'petstore_read_cache_hits_total',
    help: 'getPet (kind=pet) and listPets (kind=page) answered from the read cache.',
    labelNames: ['kind']
  })

  private readonly readCacheMisses = this.counter({
    name: 'petstore_read_cache_misses_total',
    help: 'getPet (kind=pet) and listPets (kind=page) that had to ask the store.',
    labelNames: ['kind']
  })

  readonly readCache = {
    pet: { hits: this.readCacheHits.labels('pet'), misses: this.readCacheMisses.labels('pet') },
    page: { hits: this.readCacheHits.labels('page'), misses: this.readCacheMisses.labels('page') }
  }

  /** Read at each scrape: set by the read cache (http/representations.ts) and by the entry (the log's count). */
  readCacheSize = (): { entries: number, bytes: number } => ({ entries: 0, bytes: 0 })
  logLinesDropped = (): number => 0
  private readonly getPetSunset: Gauge
  private readonly durations: Histogram<'method' | 'route' | 'status'>
  private readonly delays: IntervalHistogram | undefined

  constructor (store: object, opts: { processMetrics?: boolean } = {}) {
    const dropped = () => this.logLinesDropped()
    this.counter({
      name: 'petstore_log_lines_dropped_total',
      help: 'Log lines lost: more than 16 MiB waited for a slow stdout, or stdout failed (its reader gone). The lines themselves cannot say so.',
      collect () { this.reset(); this.inc(dropped()) }
    })
    this.getPetSunset = this.gauge({
      name: 'petstore_getpet_sunset_timestamp_seconds',
      help: 'When the deprecated getPet is removed (its sunset), in seconds since the Unix epoch: alert rules compare it with time().'
    })
    // No series until the getPet route says when (a Metrics without the app).
    this.getPetSunset.remove()
    const size = () => this.readCacheSize()
    this.gauge({ name: 'petstore_read_cache_entries', help: 'Representations held by the read cache.', collect () { this.set(size().entries) } })
    this.gauge({ name: 'petstore_read_cache_bytes', help: 'Memory the read cache accounts for (bodies plus a fixed overhead per entry), at most READ_CACHE_MAX_MB.', collect () { this.set(size().bytes) } })
    if (isPooled(store)) {
      this.gauge({
        name: 'petstore_store_pool_connections',
        help: 'Database connection pool: total and idle connections, and callers waiting for one.',
        labelNames: ['state'],
        collect () {
          const s = store.poolStats()
          this.set({ state: 'total' }, s.total)
          this.set({ state: 'idle' }, s.idle)
          this.set({ state: 'waiting' }, s.waiting)
        }
      })
    }
    if (namesStatements(store)) {
      this.gauge({
        name: 'petstore_pg_named_statements',
        help: 'PostgreSQL: 1 while hot statements are sent as named (server-side prepared) statements, 0 when they are not: PG_PREPARED_STATEMENTS=off, or auto after a transaction-mode pooler showed (logged once at warn).',
        collect () { this.set(store.namedStatements() ? 1 : 0) }
      })
    }
    this.durations = new Histogram({
      name: 'petstore_http_request_duration_seconds',
      help: 'Time from receiving a request to finishing its response, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry]
    })
    if (opts.processMetrics === true) {
      collectDefaultMetrics({ register: this.registry, prefix: 'petstore_' })
      const delays = this.delays = monitorEventLoopDelay()
      delays.enable()
      // prom-client's event-loop delay gauges, each replaced by one that leaves its series out while
      // no delay was sampled since the last scrape, where prom-client's would show a minimum of
      // 9223372036.85 s and a mean of NaN (test/observability/metrics.test.ts fails with theirs).
      for (const [stat, help, read] of LOOP_DELAY_GAUGES) {
        const name = `petstore_nodejs_eventloop_lag_${stat}_seconds`
        this.registry.removeSingleMetric(name)
        this.gauge({
          name,
          help,
          collect () {
            if (delays.count === 0) this.remove()
            else this.set(read(delays) / 1e9)
            // Each scrape reports the delays since the previous one; the last gauge read resets them.
            if (stat === 'p99') delays.reset()
          }
        })
      }
    }
  }

  /** prom-client's metrics, each in this app's registry. */
  private counter<L extends string> (c: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
    return new Counter({ ...c, registers: [this.registry] })
  }

  private gauge<L extends string> (c: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
    return new Gauge({ ...c, registers: [this.registry] })
  }

  stopEventLoopDelays (): void {
    this.delays?.disable()
  }

  watchGetPetSunset (at: Date): void {
    this.getPetSunset.set(at.getTime() / 1000)
  }

  countGetPetCall (keyId: number): void {
    this.getPetCalls.inc({ key_id: String(keyId) })
  }

  /** Counts a finished request; route is undefined when none matched. */
  observe (method: string, route: string | undefined, status: number, ms: number): void {
    const labels = { method, route: route ?? 'unmatched', status: String(status) }
    this.requests.inc(labels)
    this.durations.observe(labels, ms / 1000)
  }
}

/** GET /metrics (Prometheus text format) on a listener separate from the API, so it is never public by accident. */
export function buildMetricsApp (metrics: Metrics): FastifyInstance {
  const app = Fastify({ logger: false })
  app.addHook('onClose', async () => { metrics.stopEventLoopDelays() })
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType)
    return await metrics.registry.metrics()
  })
  return app
}
