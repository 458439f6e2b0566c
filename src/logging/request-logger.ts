import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString, Logger } from 'pino'

/**
 * request.log, made only when something logs through it. Fastify gives every request a pino child
 * logger (request.log) bound to its request id; making one (an object, the bindings serialised, the
 * formatters rebuilt because Fastify always passes options) costs on every request, while on a
 * successful request nothing logs through it: the access line is written by the observability
 * plugin itself (access-line.ts). This stands in for the child and makes the real one on the first
 * call at an enabled level, so a request pays an object of three fields instead. The lines written
 * through it are pino's own, with the same bindings, level and serializers as the child's.
 */
export class RequestLogger implements FastifyBaseLogger {
  private made: Logger | undefined

  constructor (private readonly parent: Logger, readonly bindings: Bindings, private readonly options: ChildLoggerOptions) {}

  /**
   * Whether a line written for this request would be `parent`'s plus the bindings and nothing else:
   * no child made yet (nothing changed its bindings or level) and no options of its own (a route's
   * log level or serializers). access-line.ts writes its line itself only then.
   */
  untouchedChildOf (parent: Logger): boolean {
    return this.made === undefined && this.parent === parent && this.options.level === undefined && this.options.serializers === undefined
  }

  /** The pino child logger this stands in for (made on first use). */
  get pino (): Logger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }

  get level (): LevelWithSilentOrString {
    return this.made?.level ?? this.options.level ?? this.parent.level
  }

  set level (level: LevelWithSilentOrString) {
    this.pino.level = level
  }

  // Methods on the prototype, not arrow fields: a request would pay seven closures otherwise.
  fatal (...args: unknown[]): void { this.log('fatal', args) }
  error (...args: unknown[]): void { this.log('error', args) }
  warn (...args: unknown[]): void { this.log('warn', args) }
  info (...args: unknown[]): void { this.log('info', args) }
  debug (...args: unknown[]): void { this.log('debug', args) }
  trace (...args: unknown[]): void { this.log('trace', args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.pino.child(bindings, options)
  }

  /** Whether a line at `level` would be written: the parent decides until the child exists or has its own level. */
  isLevelEnabled (level: Level): boolean {
    return this.made === undefined && this.options.level === undefined
      ? this.parent.isLevelEnabled(level)
      : this.pino.isLevelEnabled(level)
  }

  private log (level: Level, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return
    const child = this.pino
    Reflect.apply(child[level], child, args)
  }
}

/**
 * Fastify's childLoggerFactory (app.ts): request.log as a RequestLogger when the logger is pino's
 * (the app's always is), else the parent's own child.
 */
export function requestLogger (logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const parent = logger as Partial<Logger>
  return typeof parent.isLevelEnabled === 'function' ? new RequestLogger(logger as Logger, bindings, options) : logger.child(bindings, options)
}
