import underPressure from '@fastify/under-pressure'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'

export interface OverloadOptions {
  /** Mean event-loop delay (ms) past which requests are shed; 0 turns shedding off. */
  maxEventLoopDelayMs: number
  /** How often the delay is sampled (tests shorten it). */
  sampleIntervalMs?: number
}

/**
 * Overload shedding: while the event loop lags past the bound, every request (health checks
 * included) is answered at once with 503 and Retry-After instead of queueing behind the lag.
 * @fastify/under-pressure samples the delay (its timer stops when the app closes, the library's
 * onClose); the check itself is one comparison in the onRequest pass (request-checks.ts). The
 * library is given no bound, so it installs no hook of its own: its hook reads
 * `request.routeOptions` (an object built on every read) for each request.
 */
async function overload (app: FastifyInstance, opts: OverloadOptions): Promise<void> {
  const max = opts.maxEventLoopDelayMs
  if (max <= 0) return
  await app.register(underPressure, { sampleInterval: opts.sampleIntervalMs ?? 1000 })
  const pressure = app.memoryUsage
  app.checkOnArrival('overload', () => {
    if (pressure().eventLoopDelay <= max) return
    app.metrics.overloaded.inc()
    throw new ApiError('service_unavailable', 'the server is overloaded; retry later', { 'retry-after': '2' })
  })
}

export default fp(overload, { name: 'petstore-overload', dependencies: ['petstore-observability', 'petstore-request-checks'] })
