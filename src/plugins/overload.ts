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
 * Overload shedding by @fastify/under-pressure: while the event loop lags past the bound, every
 * request (health checks included) is answered at once with 503 and Retry-After instead of queueing
 * behind the lag. The library's own onRequest hook decides; its pressure handler here counts the
 * shed request and answers with the API's Error. Registered after CORS (app.ts), so a browser can
 * read the 503.
 */
async function overload (app: FastifyInstance, opts: OverloadOptions): Promise<void> {
  if (opts.maxEventLoopDelayMs <= 0) return
  await app.register(underPressure, {
    maxEventLoopDelay: opts.maxEventLoopDelayMs,
    sampleInterval: opts.sampleIntervalMs ?? 1000,
    pressureHandler: async () => {
      app.metrics.overloaded.inc()
      throw new ApiError('service_unavailable', 'the server is overloaded; retry later', { 'retry-after': '2' })
    }
  })
}

export default fp(overload, { name: 'petstore-overload', dependencies: ['petstore-observability'] })
