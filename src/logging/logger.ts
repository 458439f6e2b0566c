import { createRequire } from 'node:module'
import type { FastifyServerOptions } from 'fastify'
import type PinoPrettyFactory from 'pino-pretty'
import type { Config } from '../config/index.js'
import { LogDestination } from './log-destination.js'
import type { Tracing } from '../observability/tracing.js'

const require = createRequire(import.meta.url)

/** Most bytes of JSON log lines held in memory while stdout is slower than the service (16 MiB). */
const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024
/** Longest wait for buffered lines to be written at exit (a healthy pipe takes milliseconds). */
const LOG_END_WAIT_MS = 2000

export interface Log {
  /** The logger options for buildApp. */
  options: NonNullable<Exclude<FastifyServerOptions['logger'], boolean>>
  /** Writes out every line still buffered and waits until it is written; nothing may log afterwards. */
  end: () => Promise<void>
  /** Lines lost so far: past the memory bound while stdout was slow, or after stdout failed (its reader gone). */
  dropped: () => number
}

/**
 * The logger choice, made by the entry (not the app): pretty, coloured lines (pino-pretty, in
 * process and synchronous, so nothing is lost at exit) when stdout is a terminal, pino's JSON lines
 * when it is piped (journald, Kubernetes, a file) or LOG_FORMAT=json. NO_COLOR keeps them plain.
 * JSON lines go through a destination whose writes never wait (log-destination.ts): a few ms of
 * lines per write, non-blocking to a pipe, from libuv's thread pool to a file, so a slow reader of
 * stdout (a full pipe) never stalls the event loop. The entry ends it (end()) before every exit, so no
 * line is lost at SIGTERM.
 */
export function openLog (config: Pick<Config, 'logLevel' | 'logFormat' | 'color'>, stdoutIsTTY = process.stdout.isTTY === true, tracing?: Pick<Tracing, 'mixin'>): Log {
  // While tracing, every line written inside a span carries its trace_id and span_id (pino's mixin, both formats).
  const mixin = tracing === undefined ? {} : { mixin: tracing.mixin }
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && stdoutIsTTY)
  if (pretty) {
    // Loaded only for pretty output: a start with JSON logs (a pipe, production) does not pay for it.
    const PinoPretty = require('pino-pretty') as typeof PinoPrettyFactory
    return {
      options: {
        level: config.logLevel,
        ...mixin,
        stream: PinoPretty({ colorize: config.color, sync: true, destination: 1, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
      },
      end: async () => {},
      // Written synchronously: a line is never dropped, it waits for the terminal instead.
      dropped: () => 0
    }
  }
  // Bounded: a reader of stdout that stops reading (a stuck log shipper) must not grow this process's
  // memory without end; past LOG_BUFFER_MAX_BYTES buffered, lines are dropped.
  // process.stdout's fd: opening the stream (if stdoutIsTTY did not) makes a pipe non-blocking, which
  // the destination's writes to a pipe rely on (test/server/broken-stdout.test.ts checks the flag).
  const stream = new LogDestination(process.stdout.fd, LOG_BUFFER_MAX_BYTES)
  return {
    options: { level: config.logLevel, ...mixin, stream },
    end: async () => {
      // A stdout that is gone (EPIPE: the reader exited) ends the wait at once; a reader that is
      // merely stuck would hold it forever, so the wait is also bounded: an exit must not hang on its log.
      let timer: NodeJS.Timeout | undefined
      await Promise.race([stream.end(), new Promise<void>(resolve => { timer = setTimeout(resolve, LOG_END_WAIT_MS) })])
      clearTimeout(timer)
    },
    dropped: () => stream.dropped
  }
}
