import type { FastifyBaseLogger } from 'fastify'
import pino, { type Logger } from 'pino'
import { RequestLogger } from './request-logger.js'
import type { TraceFields } from '../observability/tracing.js'

const { asJsonSym, chindingsSym, hooksSym, mixinSym, streamSym, timeSym } = pino.symbols
const needsMetadata = Symbol.for('pino.metadata')
const MESSAGE = 'request completed'
const INFO = 30

/** What one access line says about a finished request (docs/reference/behaviour.md, "Logs"). */
export interface Access {
  keyId: number | undefined
  method: string
  /** The route template; undefined when no route matched. */
  route: string | undefined
  /** The URL as it may be logged (services/redact.ts). */
  url: string
  status: number
  ms: number
  /** The request's trace, while tracing is on. */
  trace?: TraceFields
}

type Internals = Record<symbol, unknown>

/**
 * The access line, `{"level":30,"time":…,"pid":…,"hostname":…,"reqId":…,"keyId":…,"method":…,
 * "route":…,"url":…,"status":…,"ms":…,"msg":"request completed"}`, the same bytes pino writes for
 * `request.log.info({ keyId, method, route, url, status, ms }, 'request completed')`, put together
 * here from the logger's own prefix (level, time, pid and hostname as pino formats them) and the
 * fields (strings escaped as JSON, quote() below), and handed to the logger's stream.
 *
 * Why not pino itself: through pino the line costs a child logger per request (request-logger.ts)
 * and its generic serialisation (key by key, serializers and redaction looked up for each), several
 * times what this costs on every request. Pino stays the logger
 * for everything else, and for this line too whenever the shortcut could differ from it: the
 * logger's configuration is checked once, here, by having pino serialise a sample (with characters
 * that need escaping) and comparing the bytes; any formatter, mixin, serializer, redaction, message
 * key or stream hook that changes them, and a request whose logger was made or configured (something
 * logged through it, or a route log level), sends the line through pino.
 */
export function accessLogger (root: FastifyBaseLogger): (log: FastifyBaseLogger, access: Access) => void {
  const viaPino = (log: FastifyBaseLogger, a: Access): void => {
    log.info(fields(a), MESSAGE)
  }
  if (!isPino(root) || !sameAsPino(root)) return viaPino
  const internals = root as unknown as Internals
  const stream = internals[streamSym] as { write: (line: string) => unknown }
  const time = internals[timeSym] as () => string
  const chindings = internals[chindingsSym] as string
  return (log, a) => {
    const reqId = log instanceof RequestLogger && log.untouchedChildOf(root) ? log.bindings.reqId : undefined
    if (typeof reqId !== 'string') {
      viaPino(log, a)
      return
    }
    if (!root.isLevelEnabled('info')) return
    stream.write(format(time(), chindings, reqId, a))
  }
}

/** The line's fields as pino is given them. */
function fields (a: Access): object {
  return { keyId: a.keyId, method: a.method, route: a.route, url: a.url, status: a.status, ms: a.ms, ...a.trace }
}

function format (time: string, chindings: string, reqId: string, a: Access): string {
  return '{"level":30' + time + chindings +
    ',"reqId":' + quote(reqId) +
    (a.keyId === undefined ? '' : ',"keyId":' + a.keyId) +
    ',"method":' + quote(a.method) +
    (a.route === undefined ? '' : ',"route":' + quote(a.route)) +
    ',"url":' + quote(a.url) +
    ',"status":' + a.status +
    ',"ms":' + a.ms +
    (a.trace === undefined ? '' : ',"trace_id":' + quote(a.trace.trace_id) + ',"span_id":' + quote(a.trace.span_id) + ',"trace_flags":' + quote(a.trace.trace_flags)) +
    ',"msg":"request completed"}\n'
}

/**
 * A string as a JSON string: quoted as it is when it holds only printable ASCII other than `"` and
 * `\` (request ids, methods, route templates and nearly every URL; one pass over the characters),
 * else through JSON.stringify (costly even for a short string, which is why it is not the default).
 */
function quote (s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return JSON.stringify(s)
  }
  return '"' + s + '"'
}

function isPino (logger: FastifyBaseLogger): logger is Logger {
  const internals = logger as unknown as Internals
  return typeof (logger as Partial<Logger>).isLevelEnabled === 'function' && typeof internals[chindingsSym] === 'string' &&
    typeof internals[timeSym] === 'function' && typeof (internals[streamSym] as { write?: unknown } | undefined)?.write === 'function'
}

/** Whether format() writes what pino would for this logger: one sample, both ways, compared. */
function sameAsPino (root: Logger): boolean {
  const internals = root as unknown as Internals
  const stream = internals[streamSym] as Internals
  const hooks = internals[hooksSym] as { streamWrite?: unknown, logMethod?: unknown } | undefined
  if (internals[mixinSym] !== undefined && internals[mixinSym] !== null) return false
  if (hooks?.streamWrite !== undefined || hooks?.logMethod !== undefined || stream[needsMetadata] === true || root.msgPrefix !== undefined) return false
  const time = (internals[timeSym] as () => string)()
  const reqId = 'req-1'
  const sample: Access = { keyId: 7, method: 'GET', route: '/v1/pets/:petId', url: '/v1/"pets"/\\1?a=\u00e9\u0001', status: 200, ms: 1.25, trace: { trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: 'b7ad6b7169203331', trace_flags: '01' } }
  const child = root.child({ reqId }, {}) as unknown as Internals
  const asJson = child[asJsonSym] as (obj: object, msg: string, level: number, time: string) => string
  const expected = asJson.call(child, fields(sample), MESSAGE, INFO, time)
  return expected === format(time, internals[chindingsSym] as string, reqId, sample)
}
