import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import type PinoPrettyFactory from 'pino-pretty'
import type { Config } from '../config/index.js'
import { LogDestination } from './log-destination.js'
import type { Tracing } from '../observability/tracing.js'

const require = createRequire(import.meta.url)

/** Bounds memory when a stdout reader stops reading (a stuck log shipper); past it, lines are dropped. */
const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024
const LOG_END_WAIT_MS = 2000

/** Pretty lines on a terminal (synchronous: nothing lost at exit), else JSON through log-destination.ts. */
export function openLog (config: Pick<Config, 'logLevel' | 'logFormat' | 'color'>, tracing?: Pick<Tracing, 'mixin'>) {
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY)
  if (pretty) {
    // Loaded only when needed: a production start with JSON logs does not pay for it.
    const PinoPretty = require('pino-pretty') as typeof PinoPrettyFactory
    return {
      options: {
        level: config.logLevel,
        mixin: tracing?.mixin,
        stream: PinoPretty({ colorize: config.color, sync: true, destination: 1, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      },
      end: async () => {},
      dropped: () => 0
    }
  }
  // Reading process.stdout opens it, which makes a pipe non-blocking: the destination relies on that.
  const stream = new LogDestination(process.stdout.fd, LOG_BUFFER_MAX_BYTES)
  return {
    options: { level: config.logLevel, mixin: tracing?.mixin, stream },
    // Bounded: a stuck reader must not hang the exit.
    end: async () => { await Promise.race([stream.end(), sleep(LOG_END_WAIT_MS, undefined, { ref: false })]) },
    dropped: () => stream.dropped
  }
}
