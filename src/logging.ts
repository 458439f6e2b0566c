import type { FastifyServerOptions } from 'fastify'
import PinoPretty from 'pino-pretty'
import type { Config } from './config.js'

/**
 * The logger choice, made by the entry (not the app): pretty, coloured lines (pino-pretty, in
 * process and synchronous, so nothing is lost at exit) when stdout is a terminal, pino's JSON lines
 * when it is piped (journald, Kubernetes, a file) or LOG_FORMAT=json. NO_COLOR keeps them plain.
 */
export function loggerOptions (config: Pick<Config, 'logLevel' | 'logFormat' | 'color'>, stdoutIsTTY = process.stdout.isTTY === true): NonNullable<Exclude<FastifyServerOptions['logger'], boolean>> {
  const pretty = config.logFormat === 'pretty' || (config.logFormat === 'auto' && stdoutIsTTY)
  if (!pretty) return { level: config.logLevel }
  return {
    level: config.logLevel,
    stream: PinoPretty({ colorize: config.color, sync: true, destination: 1, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' })
  }
}
