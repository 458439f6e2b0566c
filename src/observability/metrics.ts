import { createRequire } from 'node:module'
import Fastify, { type FastifyInstance } from 'fastify'
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import type { Registry } from 'prom-client'
import { isPooled, namesStatements } from '../store/store.js'

type PromClient = typeof import('prom-client')

type ReadCacheKind = 'pet' | 'page'
type RouteLabel = 'method' | 'route' | 'status'
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** A count kept as a plain number on the hot path; prom-client reads it when scraped (a metric's collect()). */
export class Tally {
  n = 0
  inc (): void { this.n++ }
}

/** Counts by label values (a few series, e.g. scope=key|address), as plain numbers until scraped. */
export class LabelledTally<L extends string = never> {
  readonly series = new Map<string, { labels: Partial<Record<L, string>>, n: number }>()
  inc (labels: Partial<Record<L, string>> = {}, value = 1): void {
    const id = JSON.stringify(labels)
    const s = this.series.get(id)
    if (s === undefined) this.series.set(id, { labels, n: value })
    else s.n += value
  }
}

/** One method + route + status: its request count, latency sum and latency bucket counts (not cumulative). */
interface RouteSeries { labels: Record<RouteLabel, string>, count: number, sum: number, buckets: number[] }

const DURATION = {
  name: 'petstore_http_request_duration_seconds',
  help: 'Time from receiving a request to finishing its response, by method, route template and status.'
}

/** prom-client's JSON form of one series value (what Registry.getMetricsAsJSON() gives and AggregatorRegistry.aggregate() takes). */
interface SeriesValue { metricName: string, labels: Record<string, string | number>, value: number }

/**
 * The request-duration histogram as prom-client's JSON form, from the plain numbers Metrics.observe
 * keeps, made into a registry with prom-client's public AggregatorRegistry.aggregate() when scraped.
 */
function durationsJson (series: Iterable<RouteSeries>): { name: string, help: string, type: 'histogram', aggregator: 'sum', values: SeriesValue[] } {
  const values: SeriesValue[] = []
  const bucket = `${DURATION.name}_bucket`
  for (const s of series) {
    let acc = 0
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      acc += s.buckets[i]!
      values.push({ metricName: bucket, labels: { le: DURATION_BUCKETS[i]!, ...s.labels }, value: acc })
    }
    values.push({ metricName: bucket, labels: { le: '+Inf', ...s.labels }, value: s.count })
    values.push({ metricName: `${DURATION.name}_sum`, labels: { ...s.labels }, value: s.sum })
    values.push({ metricName: `${DURATION.name}_count`, labels: { ...s.labels }, value: s.count })
  }
  return { name: DURATION.name, help: DURATION.help, type: 'histogram', aggregator: 'sum', values }
}

/** The event-loop delay gauges of prom-client's default metrics that read its delay histogram. */
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
 * The Prometheus metrics of one app. A registry per app (not prom-client's global one), so several
 * apps in one process (tests) keep separate counts. Served on a listener of its own (buildMetricsApp).
 *
 * Every count is a plain number until scraped, read then through prom-client's public API: each
 * counter's and gauge's collect(), and for the request-duration histogram its JSON form turned into
 * a registry by AggregatorRegistry.aggregate() and merged (Registry.merge) with the others
 * (snapshot()). Why not prom-client's own inc() and observe() on every request: they validate and
 * hash the label values on every call, a labelled child made once included. Measured in one process
 * (prom-client 15.1.3, Node 24, 1,000,000 calls on one series, median of 7 rounds, pinned to one core
 * of a loaded machine): Histogram child observe() 833 ns, Counter child inc() 490 ns,
 * Metrics.observe 46 ns (it allocates nothing on a known series).
 *
 * prom-client is loaded, and the registry built, on the first scrape (with METRICS_PORT off, the
 * default, never), not at every start. The default process metrics start then too: event-loop delay
 * and GC durations from the first scrape on. The event-loop delay gauges leave out their series
 * while no delay has been sampled since the last scrape (docs/reference/metrics.md).
 */
export class Metrics {
  readonly rateLimited = new LabelledTally<'scope'>()
  /** Requests the authentication policy refused, by reason (never a key, a hash or an id): see AuthRefusal. */
  readonly authRefusals = new LabelledTally<'reason'>()
  readonly overloaded = new LabelledTally()
  readonly storeErrors = new LabelledTally<'store'>()
  /** Read cache lookups (services/pet-reads.ts): a lookup costs one increment. */
  readonly readCache: Record<ReadCacheKind, { hits: Tally, misses: Tally }> = {
    pet: { hits: new Tally(), misses: new Tally() },
    page: { hits: new Tally(), misses: new Tally() }
  }

  private readCacheSize: () => { entries: number, bytes: number } = () => ({ entries: 0, bytes: 0 })
  private logLinesDropped: () => number = () => 0
  private getPetSunsetAt: Date | undefined
  // Requests by route, method and status (nested, so that a known series is found without making a
  // key), and getPet calls by key id: plain numbers, read when scraped.
  private readonly series = new Map<string | undefined, Map<string, Map<number, RouteSeries>>>()
  private readonly getPetCalls = new Map<number, Tally>()
  private built: Registry | undefined
  private delays: IntervalHistogram | undefined

  constructor (private readonly store: object, private readonly opts: { processMetrics?: boolean } = {}) {}

  /**
   * These metrics, as they are now, as a prom-client registry (its metrics() is the /metrics text).
   * prom-client is loaded on the first call.
   */
  snapshot (): Registry {
    const prom = createRequire(import.meta.url)('prom-client') as PromClient
    this.built ??= this.buildRegistry(prom)
    const durations: Registry = prom.AggregatorRegistry.aggregate([[durationsJson(this.allSeries())]] as unknown as Parameters<typeof prom.AggregatorRegistry.aggregate>[0])
    return prom.Registry.merge([this.built, durations])
  }

  private * allSeries (): Iterable<RouteSeries> {
    for (const byMethod of this.series.values()) {
      for (const byStatus of byMethod.values()) yield * byStatus.values()
    }
  }

  private buildRegistry (prom: PromClient): Registry {
    const { Counter, Gauge } = prom
    const registry = new prom.Registry()
    const { store, opts } = this
    const registers = [registry]
    const series = () => this.allSeries()
    // eslint-disable-next-line no-new
    new Counter({
      name: 'petstore_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
      collect () {
        this.reset()
        for (const s of series()) this.inc(s.labels, s.count)
      }
    })
    const tallied = <L extends string>(tally: LabelledTally<L>) => function (this: { reset: () => void, inc: (labels: Partial<Record<L, string>>, value: number) => void }) {
      this.reset()
      for (const s of tally.series.values()) this.inc(s.labels, s.n)
    }
    // eslint-disable-next-line no-new
    new Counter({ name: 'petstore_rate_limited_total', help: 'Requests refused with 429, by limit: key (per API key) or address (failed authentication per client address).', labelNames: ['scope'], registers, collect: tallied(this.rateLimited) })
    // eslint-disable-next-line no-new
    new Counter({
      name: 'petstore_auth_refusals_total',
      help: 'Requests refused by authentication or authorization, by reason: missing (no bearer key), unknown (not a key issued here, or malformed), ' +
        'revoked, expired (401), insufficient_scope (403: a valid key without the operation\'s scope).',
      labelNames: ['reason'],
      registers,
      collect: tallied(this.authRefusals)
    })
    // eslint-disable-next-line no-new
    new Counter({ name: 'petstore_overload_rejections_total', help: 'Requests shed with 503 because the event loop lagged past EVENT_LOOP_MAX_DELAY_MS.', registers, collect: tallied(this.overloaded) })
    // eslint-disable-next-line no-new
    new Counter({ name: 'petstore_store_errors_total', help: 'Failures to reach a backing store: the database (sqlite/postgres) or the rate-limit Redis.', labelNames: ['store'], registers, collect: tallied(this.storeErrors) })
    const getPetCalls = this.getPetCalls
    // eslint-disable-next-line no-new
    new Counter({
      name: 'petstore_deprecated_getpet_calls_total',
      help: 'Calls to the deprecated getPet (GET /v1/pets/{petId}) by API key id: who must migrate before the sunset.',
      labelNames: ['key_id'],
      registers,
      collect () {
        this.reset()
        for (const [id, t] of getPetCalls) this.inc({ key_id: String(id) }, t.n)
      }
    })
    const readCache = this.readCache
    const kinds = Object.keys(readCache) as ReadCacheKind[]
    // eslint-disable-next-line no-new
    new Counter({
      name: 'petstore_read_cache_hits_total',
      help: 'getPet (kind=pet) and listPets (kind=page) answered from the read cache.',
      labelNames: ['kind'],
      registers,
      collect () { this.reset(); for (const kind of kinds) this.inc({ kind }, readCache[kind].hits.n) }
    })
    // eslint-disable-next-line no-new
    new Counter({
      name: 'petstore_read_cache_misses_total',
      help: 'getPet (kind=pet) and listPets (kind=page) that had to ask the store.',
      labelNames: ['kind'],
      registers,
      collect () { this.reset(); for (const kind of kinds) this.inc({ kind }, readCache[kind].misses.n) }
    })
    const dropped = () => this.logLinesDropped()
    // eslint-disable-next-line no-new
    new Counter({
      name: 'petstore_log_lines_dropped_total',
      help: 'Log lines lost: more than 16 MiB waited for a slow stdout, or stdout failed (its reader gone). The lines themselves cannot say so.',
      registers,
      collect () { this.reset(); this.inc(dropped()) }
    })
    const sunset = () => this.getPetSunsetAt
    // No series until the getPet route says when (a Metrics without the app).
    // eslint-disable-next-line no-new
    new Gauge({
      name: 'petstore_getpet_sunset_timestamp_seconds',
      help: 'When the deprecated getPet is removed (its sunset), in seconds since the Unix epoch: alert rules compare it with time().',
      registers,
      collect () {
        const at = sunset()
        if (at === undefined) this.remove()
        else this.set(at.getTime() / 1000)
      }
    })
    const size = () => this.readCacheSize()
    // eslint-disable-next-line no-new
    new Gauge({ name: 'petstore_read_cache_entries', help: 'Representations held by the read cache.', registers, collect () { this.set(size().entries) } })
    // eslint-disable-next-line no-new
    new Gauge({ name: 'petstore_read_cache_bytes', help: 'Memory the read cache accounts for (bodies plus a fixed overhead per entry), at most READ_CACHE_MAX_MB.', registers, collect () { this.set(size().bytes) } })
    if (isPooled(store)) {
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
    if (namesStatements(store)) {
      const named = store.namedStatements.bind(store)
      // eslint-disable-next-line no-new
      new Gauge({
        name: 'petstore_pg_named_statements',
        help: 'PostgreSQL: 1 while hot statements are sent as named (server-side prepared) statements, 0 when they are not: PG_PREPARED_STATEMENTS=off, or auto after a transaction-mode pooler showed (logged once at warn).',
        registers,
        collect () { this.set(named() ? 1 : 0) }
      })
    }
    if (opts.processMetrics === true) {
      prom.collectDefaultMetrics({ register: registry, prefix: 'petstore_' })
      // prom-client's event-loop delay gauges report its delay histogram as it is, and a histogram
      // without a sample (before the first, and again when scraped twice within its 10 ms
      // resolution) has a min of 2^63 ns and a mean of NaN. The same gauges, reading a histogram of
      // ours, leave out their series then: a value no loop had is worse than no value.
      const delays = this.eventLoopDelays()
      for (const [stat, help, read] of LOOP_DELAY_GAUGES) {
        const name = `petstore_nodejs_eventloop_lag_${stat}_seconds`
        registry.removeSingleMetric(name)
        // eslint-disable-next-line no-new
        new Gauge({
          name,
          help,
          registers,
          collect () {
            if (delays.count === 0) this.remove()
            else this.set(read(delays) / 1e9)
            // Each scrape reports the delays since the previous one; the last gauge read resets them.
            if (stat === 'p99') delays.reset()
          }
        })
      }
    }
    return registry
  }

  /**
   * With process metrics, starts sampling the event-loop delay (else it starts on the first scrape):
   * the metrics listener starts it with itself, so that its first scrape has samples.
   */
  startSampling (): void {
    if (this.opts.processMetrics === true) this.eventLoopDelays()
  }

  private eventLoopDelays (): IntervalHistogram {
    if (this.delays === undefined) {
      this.delays = monitorEventLoopDelay()
      this.delays.enable()
    }
    return this.delays
  }

  /** Stops sampling the event-loop delay (the metrics listener closed). */
  stopEventLoopDelays (): void {
    this.delays?.disable()
  }

  /** Where the read cache gauges read its size. */
  watchReadCache (size: () => { entries: number, bytes: number }): void {
    this.readCacheSize = size
  }

  /** Where the dropped-log-lines counter reads its figure (the entry's log destination). */
  watchLogLinesDropped (dropped: () => number): void {
    this.logLinesDropped = dropped
  }

  /** Where the getPet sunset gauge reads its time (the getPet route's sunset). */
  watchGetPetSunset (at: Date): void {
    this.getPetSunsetAt = at
  }

  /** Counts a call of the deprecated getPet by the key that made it. */
  countGetPetCall (keyId: number): void {
    let t = this.getPetCalls.get(keyId)
    if (t === undefined) {
      t = new Tally()
      this.getPetCalls.set(keyId, t)
    }
    t.n++
  }

  /** Counts a finished request (onResponse): its route template (undefined: none matched), status and latency. */
  observe (method: string, route: string | undefined, status: number, ms: number): void {
    let byMethod = this.series.get(route)
    if (byMethod === undefined) this.series.set(route, byMethod = new Map())
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) byMethod.set(method, byStatus = new Map())
    let s = byStatus.get(status)
    if (s === undefined) {
      s = { labels: { method, route: route ?? 'unmatched', status: String(status) }, count: 0, sum: 0, buckets: DURATION_BUCKETS.map(() => 0) }
      byStatus.set(status, s)
    }
    const seconds = ms / 1000
    s.count++
    s.sum += seconds
    // Not cumulative here (one increment); made cumulative when scraped. Past the last bound: +Inf only.
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (seconds <= DURATION_BUCKETS[i]!) {
        s.buckets[i]!++
        break
      }
    }
  }
}

/** GET /metrics (Prometheus text format) on a listener separate from the API, so it is never public by accident. */
export function buildMetricsApp (metrics: Metrics): FastifyInstance {
  const app = Fastify({ logger: false })
  metrics.startSampling()
  app.addHook('onClose', async () => { metrics.stopEventLoopDelays() })
  app.get('/metrics', async (_request, reply) => {
    const registry = metrics.snapshot()
    reply.header('content-type', registry.contentType)
    return await registry.metrics()
  })
  return app
}
