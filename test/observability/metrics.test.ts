import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildMetricsApp, Metrics } from '../../src/observability/metrics.js'
import { onCleanup } from '../helpers/cleanup.js'

const DURATION = 'petstore_http_request_duration_seconds'

describe('request metrics', () => {
  it('count requests and their durations in the documented buckets, by method, route template and status', async () => {
    const metrics = new Metrics({})
    const seen: Array<[string, string | undefined, number, number]> = [
      ['GET', '/v1/pets', 200, 0.3], ['GET', '/v1/pets', 200, 0.5], ['GET', '/v1/pets', 200, 7], ['GET', '/v1/pets', 200, 30000],
      ['GET', '/v1/pets/:petId', 404, 1.2], ['POST', undefined, 405, 0.01]
    ]
    for (const [method, route, status, ms] of seen) metrics.observe(method, route, status, ms)
    const text = await metrics.registry.getSingleMetricAsString(DURATION)
    assert.match(text, /^# HELP petstore_http_request_duration_seconds Time from receiving a request to finishing its response, by method, route template and status\.$/m)
    assert.match(text, /^# TYPE petstore_http_request_duration_seconds histogram$/m)
    const series = '{method="GET",route="/v1/pets",status="200"}'
    const buckets = [...text.matchAll(/^petstore_http_request_duration_seconds_bucket\{le="([^"]+)",method="GET",route="\/v1\/pets",status="200"\} (\d+)$/gm)]
      .map(([, le, n]) => [le, Number(n)])
    assert.deepEqual(buckets, [
      ['0.0005', 2], ['0.001', 2], ['0.0025', 2], ['0.005', 2], ['0.01', 3], ['0.025', 3], ['0.05', 3], ['0.1', 3],
      ['0.25', 3], ['0.5', 3], ['1', 3], ['2.5', 3], ['5', 3], ['10', 3], ['+Inf', 4]
    ])
    assert.ok(text.includes(`${DURATION}_count${series} 4\n`))
    assert.match(text, new RegExp(`${DURATION}_sum\\{method="GET",route="/v1/pets",status="200"\\} 30\\.0078`))
    assert.match(text, /petstore_http_request_duration_seconds_bucket\{le="0\.0025",method="GET",route="\/v1\/pets\/:petId",status="404"\} 1/)
    const count = await metrics.registry.getSingleMetricAsString('petstore_http_requests_total')
    assert.match(count, /petstore_http_requests_total\{method="GET",route="\/v1\/pets",status="200"\} 4/)
    assert.match(count, /petstore_http_requests_total\{method="POST",route="unmatched",status="405"\} 1/)
  })
})

describe('process metrics before the first sample', () => {
  it('leave the event-loop delay series out instead of a sentinel or NaN, and report them once sampled', async (t) => {
    // Delay sampling starts with the Metrics; scraped in the same turn of the event loop: no sample yet.
    const metrics = new Metrics({}, { processMetrics: true })
    onCleanup(t, () => { metrics.stopEventLoopDelays() })
    const first = await metrics.registry.metrics()
    assert.match(first, /# TYPE petstore_nodejs_eventloop_lag_min_seconds gauge/)
    assert.match(first, /^petstore_process_cpu_seconds_total /m)
    assert.doesNotMatch(first, /^petstore_nodejs_eventloop_lag_(min|max|mean|stddev|p50|p90|p99)_seconds /m)
    assert.doesNotMatch(first, / nan$|9223372036/im)
    // No getPet sunset known to this Metrics (no app set it): no series either.
    assert.doesNotMatch(first, /^petstore_getpet_sunset_timestamp_seconds /m)
    // A fresh metrics listener as the server starts it, scraped at once: no such value either.
    const fresh = buildMetricsApp(new Metrics({}, { processMetrics: true }))
    onCleanup(t, () => fresh.close())
    assert.doesNotMatch((await fresh.inject({ url: '/metrics' })).body, / nan$|9223372036/im)
    // After some turns of the event loop (the sampler's resolution is 10 ms), the delays are reported.
    await new Promise(resolve => setTimeout(resolve, 50))
    const metricsApp = buildMetricsApp(metrics)
    onCleanup(t, () => metricsApp.close())
    const later = await metricsApp.inject({ url: '/metrics' })
    assert.match(String(later.headers['content-type']), /^text\/plain; version=0\.0\.4/)
    const min = /^petstore_nodejs_eventloop_lag_min_seconds (\S+)$/m.exec(later.body)
    assert.ok(min !== null, 'the minimum delay is reported once sampled')
    assert.ok(Number(min[1]) >= 0 && Number(min[1]) < 9223372036)
    assert.match(later.body, /^petstore_nodejs_eventloop_lag_mean_seconds \d/m)
  })
})

describe('the getPet sunset', () => {
  it('is reported in seconds since the Unix epoch once the route sets it', async () => {
    const metrics = new Metrics({})
    metrics.watchGetPetSunset(new Date('2030-01-01T00:00:00Z'))
    assert.match(await metrics.registry.metrics(), /^petstore_getpet_sunset_timestamp_seconds 1893456000$/m)
  })
})

describe('pool metrics', () => {
  it('reports the pool of a store that has one, read at scrape time', async () => {
    const stats = { total: 10, idle: 7, waiting: 0 }
    const metrics = new Metrics({ poolStats: () => stats })
    stats.waiting = 3
    const text = await metrics.registry.metrics()
    assert.match(text, /petstore_store_pool_connections\{state="total"\} 10/)
    assert.match(text, /petstore_store_pool_connections\{state="idle"\} 7/)
    assert.match(text, /petstore_store_pool_connections\{state="waiting"\} 3/)
    assert.doesNotMatch(await new Metrics({}).registry.metrics(), /pool_connections/)
  })
})
