import type { FastifyBaseLogger } from 'fastify'
import { describeFailure, errorChain } from '../runtime/failure-lines.js'

export type Dependency = 'postgres' | 'sqlite' | 'redis'

/** How the lines name a dependency, count the requests its outage touched, and say what the outage means. */
const STORE = { counted: 'requests failed on it', means: 'requests that need the store are answered 503' }
const WORDS: Record<Dependency, { name: string, counted: string, means: string }> = {
  postgres: { name: 'PostgreSQL (DATABASE_URL)', ...STORE },
  sqlite: { name: 'the SQLite database (DATABASE_URL)', ...STORE },
  redis: { name: 'the rate-limit Redis (REDIS_URL)', counted: 'requests went through uncounted', means: 'requests are let through without rate limits' }
}

interface Outage {
  since: number
  failed: number
  failedSinceLine: number
  lastFailureAt: number
  lastLineAt: number
  lastOkAt: number
  cause: string
  code: string | undefined
  probe: (() => Promise<unknown>) | undefined
  probing: boolean
}

/**
 * Logs a dependency outage instead of a line and stack per failed request: one line when it goes, at
 * most one summary every summaryEveryMs, one when it is back. A dependency that answers some requests
 * and fails others (a full disk) stays down while failures go on.
 */
export class Outages {
  private readonly down = new Map<Dependency, Outage>()
  private timer: NodeJS.Timeout | undefined

  /** quietMs: how long a dependency must go without a failure, after it answered, to be called back. */
  constructor (private readonly log: FastifyBaseLogger, private readonly opts = { summaryEveryMs: 5000, quietMs: 2000, tickMs: 1000 }) {}

  /** `probe` is called while down (one at a time) to learn it is back when no request tells. */
  failed (dependency: Dependency, err: unknown, probe?: () => Promise<unknown>): void {
    const now = Date.now()
    const cause = describeFailure(err)
    const code = errorChain(err).find(e => typeof e.code === 'string')?.code as string | undefined
    const o = this.down.get(dependency)
    if (o !== undefined) {
      o.failed++
      o.failedSinceLine++
      o.lastFailureAt = now
      o.cause = cause
      o.code = code
      return
    }
    this.down.set(dependency, { since: now, failed: 1, failedSinceLine: 0, lastFailureAt: now, lastLineAt: now, lastOkAt: 0, cause, code, probe, probing: false })
    this.log[dependency === 'redis' ? 'warn' : 'error']({ dependency, cause, ...(code !== undefined ? { code } : {}) },
      `${WORDS[dependency].name} is unavailable: ${WORDS[dependency].means}; a summary follows at most every ${this.opts.summaryEveryMs / 1000} s, and a line when it is back`)
    if (this.timer === undefined) {
      this.timer = setInterval(() => { this.tick() }, this.opts.tickMs)
      this.timer.unref()
    }
  }

  ok (dependency: Dependency): void {
    const o = this.down.get(dependency)
    if (o !== undefined) o.lastOkAt = Date.now()
  }

  isDown (dependency: Dependency): boolean {
    return this.down.has(dependency)
  }

  close (): void {
    clearInterval(this.timer)
    this.timer = undefined
  }

  private tick (): void {
    const now = Date.now()
    for (const [dependency, o] of this.down) {
      if (o.lastOkAt >= o.lastFailureAt && now - o.lastFailureAt >= this.opts.quietMs) {
        this.down.delete(dependency)
        this.log.info({ dependency, downForMs: o.lastOkAt - o.since, failed: o.failed },
          `${WORDS[dependency].name} is back after ${((o.lastOkAt - o.since) / 1000).toFixed(1)} s; ${o.failed} ${WORDS[dependency].counted} meanwhile`)
        continue
      }
      if (o.failedSinceLine > 0 && now - o.lastLineAt >= this.opts.summaryEveryMs) {
        this.log.warn({ dependency, failed: o.failedSinceLine, inLastMs: now - o.lastLineAt, downForMs: now - o.since, cause: o.cause, ...(o.code !== undefined ? { code: o.code } : {}) },
          `${WORDS[dependency].name} is still unavailable: ${o.failedSinceLine} ${WORDS[dependency].counted} in the last ${((now - o.lastLineAt) / 1000).toFixed(1)} s`)
        o.failedSinceLine = 0
        o.lastLineAt = now
      }
      if (o.probe !== undefined && !o.probing && o.lastOkAt < o.lastFailureAt) {
        o.probing = true
        o.probe().then(() => { o.lastOkAt = Date.now() }, () => {}).finally(() => { o.probing = false })
      }
    }
    if (this.down.size === 0) this.close()
  }
}
