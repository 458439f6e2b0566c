/*
 * The edge of HTTP that Node's parser and Fastify leave to the server: answers to what the parser
 * refuses, the request-target forms, Host, CONNECT. Written here, not taken as Fastify's default
 * clientErrorHandler, because that one answers at once, ahead of the answers still owed on the same
 * connection: a create pipelined before the bad bytes would lose its 201 (test/edges/pipelining.test.ts
 * fails with it), and its body is not the API's Error (test/edges/http-musts.test.ts).
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse as Response } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'

// node:http as CommonJS gives it: an ES import of it reads every export, among them the lazy
// getters that load Node's bundled undici (fetch, WebSocket), at every start, for nothing the
// server uses.
const { ServerResponse, STATUS_CODES } = process.getBuiltinModule('node:http')

/**
 * The longest request target (path and query, as sent) the service reads: RFC 9112 §3 asks every
 * recipient to take request lines of at least 8000 octets; longer is 414 (RFC 9112 §3: MUST). A
 * request line past Node's 16 KiB head limit is refused by the parser, also 414 (below).
 */
export const MAX_TARGET_LENGTH = 8192

/** The 414 answer to a target longer than MAX_TARGET_LENGTH. */
export function uriTooLong (): ApiError {
  return new ApiError('uri_too_long', `the request target is longer than ${MAX_TARGET_LENGTH} characters`)
}

/*
 * A valid Host field value (RFC 9112 §3.2 → RFC 3986 §3.2.2–3.2.3): uri-host [ ":" port ], where
 * uri-host = IP-literal / IPv4address / reg-name. IPv4address is a reg-name too, so:
 * - IP-literal: "[" (IPv6address / IPvFuture) "]"; its inside is checked by character here and by
 *   the URL parser (net.isIPv6 would refuse a zone or IPvFuture RFC 3986 allows).
 * - reg-name: *( unreserved / pct-encoded / sub-delims ), possibly empty.
 * - port: *DIGIT.
 */
const REG_NAME = "(?:[A-Za-z0-9\\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*"
const IP_LITERAL = '\\[(?:v[0-9A-Fa-f]+\\.[A-Za-z0-9\\-._~!$&\'()*+,;=:]+|[0-9A-Fa-f:.]+)\\]'
const HOST = new RegExp(`^(?:${IP_LITERAL}|${REG_NAME})(?::[0-9]*)?$`)

/** Whether a Host field value is `uri-host [":" port]` (RFC 3986), the one definition of a valid Host. */
export function validHost (value: string): boolean {
  if (!HOST.test(value)) return false
  if (value.startsWith('[') && !value.startsWith('[v')) {
    // An IPv6 address: its grammar is the URL parser's (RFC 3986 IPv6address).
    return URL.canParse(`http://${value}/`)
  }
  return true
}

/*
 * The forms of request target a server takes (RFC 9112 §3.2): origin-form (a path, `/…`), the
 * asterisk-form (`*`, exactly; OPTIONS alone, plugins/errors.ts) and the absolute-form, which a
 * server MUST accept (§3.2.2): an `http` or `https` URI whose authority is a host (not empty, no
 * userinfo: RFC 9110 §4.2.1, §4.2.4) with an optional port of at most 65535, as the URL parser reads
 * it. The authority-form is CONNECT's, for a proxy, which this server is not.
 */
const ABSOLUTE_FORM = /^https?:\/\/([^/?#]*)([/?].*)?$/i

/**
 * Why a request target is of none of the forms a server takes, as the sentence of a 400
 * `bad_request`, or undefined when it is one of them. An absolute-form's authority follows the
 * Host header's grammar (validHost).
 */
export function targetFormProblem (target: string): string | undefined {
  if (target.startsWith('/') || target === '*') return undefined
  const absolute = ABSOLUTE_FORM.exec(target)
  if (absolute === null) return 'the request target must be a path (/…), an absolute http(s) URI, or * (OPTIONS only)'
  const authority = absolute[1]!
  // The URL parser refuses an empty host and a port past 65535, but reads `http:///p` as the host p.
  if (authority === '' || !validHost(authority) || !URL.canParse(target)) {
    return 'the authority of the absolute-form request target must be a host with an optional port (at most 65535), without userinfo'
  }
  return undefined
}

/** The origin-form path and query an absolute-form target addresses (`http://h/p?q` → `/p?q`), or a path as it is. */
export function originFormOf (target: string): string {
  const absolute = ABSOLUTE_FORM.exec(target)
  if (absolute === null) return target
  const rest = absolute[2] ?? ''
  return rest.startsWith('/') ? rest : `/${rest}`
}

/** The version a refused request line names (`HTTP/1.2` → [1, 2]): the line of the read where the parser stopped. */
function requestLineVersion (err: ParserError): [number, number] | undefined {
  if (!Buffer.isBuffer(err.rawPacket) || typeof err.bytesParsed !== 'number') return undefined
  const packet = err.rawPacket
  const start = packet.subarray(0, err.bytesParsed).lastIndexOf(0x0a) + 1
  const end = packet.indexOf(0x0a, start)
  const line = packet.subarray(start, end === -1 ? packet.length : end).toString('latin1')
  const m = / HTTP\/([0-9]+)\.([0-9]+)\r?$/.exec(line)
  return m === null ? undefined : [Number(m[1]), Number(m[2])]
}

/** The 505 answer to a request line whose HTTP major version is not 1 (RFC 9110 §15.6.6). */
export function versionNotSupported (version: string): ApiError {
  return new ApiError('http_version_not_supported', `HTTP/${version} is not supported: this server speaks HTTP/1.1 (and 1.0)`)
}

type ParserError = Error & { code?: string, rawPacket?: unknown, bytesParsed?: unknown }

/** A request line still being read: a method, one space, and target bytes (no version, no line end yet). */
const REQUEST_LINE_START = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \r\n]*$/

/**
 * Whether Node's parser ran past its 16 KiB head limit inside the request line, so the target is
 * what is too long (414) rather than the headers (431). The parser tells only the bytes of the read
 * it was parsing (`rawPacket`, up to `bytesParsed`): the overflow is in the request line when what
 * follows the last line end there is a method and a target still going. A request line spread over
 * several reads whose last read holds only target bytes cannot be told from a long header value,
 * and gets 431.
 */
function overflowInRequestLine (err: ParserError): boolean {
  if (!Buffer.isBuffer(err.rawPacket)) return false
  const packet = err.rawPacket
  const seen = packet.subarray(0, typeof err.bytesParsed === 'number' ? err.bytesParsed : packet.length)
  return REQUEST_LINE_START.test(seen.subarray(seen.lastIndexOf(0x0a) + 1).toString('latin1'))
}

/** What Node's HTTP parser refused, as one of our errors. */
function toClientError (err: ParserError): ApiError {
  const code = err.code
  if (code === 'HPE_HEADER_OVERFLOW') {
    return overflowInRequestLine(err)
      ? uriTooLong()
      : new ApiError('header_too_large', 'the request line and headers are larger than the server accepts (16 KiB)')
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ApiError('request_timeout', 'the request was not received in time')
  if (code === 'HPE_INVALID_VERSION') {
    // Node's parser takes HTTP/1.0, 1.1, 2.0 and 0.9 only. A higher 1.x minor version is meant to be
    // processed as 1.1 (RFC 9110 §2.5), but only the lenient parser (insecureHTTPParser, which also
    // lets through the framing faults request smuggling needs) would pass it: it stays a 400 that says so.
    const version = requestLineVersion(err)
    if (version !== undefined && version[0] !== 1) return versionNotSupported(version.join('.'))
    if (version !== undefined) return new ApiError('bad_request', `HTTP/${version.join('.')} is refused by the server's HTTP parser, which reads HTTP/1.0 and HTTP/1.1 only; send the request as HTTP/1.1`)
  }
  if (code === 'HPE_PAUSED_H2_UPGRADE') return versionNotSupported('2.0')
  return new ApiError('bad_request', 'the request is not valid HTTP/1.1 (request line, header or framing)')
}

const inLine = Symbol('petstore.responsesInLine')
/** A socket's responses not yet closed, in order; a response holds its socket's list too. */
type InLine = { [inLine]?: Response[] }

/**
 * A server 'request' listener, prepended so it sees every request before it is answered: keeps, per
 * socket, the responses not yet closed, in the order Node writes them (one at a time, each after the
 * one before it finished). Node keeps no public record of them; the clientError handler needs the
 * list to answer after them. The response keeps the list itself: `request.socket` may be null by
 * the time it closes.
 */
export function trackResponse (request: IncomingMessage, res: Response): void {
  const socket = request.socket as Socket & InLine
  const open = (socket[inLine] ??= [])
  open.push(res)
  ;(res as Response & InLine)[inLine] = open
  res.on('close', forgetResponse)
}

/** A response's 'close' listener: closed once, it leaves its socket's list. */
function forgetResponse (this: Response & Required<InLine>): void {
  const open = this[inLine]
  open.splice(open.indexOf(this), 1)
}

/**
 * Calls `then` once every response to a request read whole before the bad bytes has been
 * written. A response already under way finishes too. The request the bad bytes cut short (its
 * body broken) never completes: the refusal is its answer, so its response is detached from the
 * socket (whatever it might write later goes nowhere) and `then` runs.
 */
function afterCompleteRequests (socket: Socket, then: () => void): void {
  // The response Node is writing on this socket right now, if any: the first one not finished.
  const res = (socket as Socket & InLine)[inLine]?.find(r => !r.writableFinished)
  if (res === undefined) {
    then()
    return
  }
  if (!res.req.complete && !res.headersSent) {
    res.detachSocket(socket)
    then()
    return
  }
  // After forgetResponse: the next response in line, if one is waiting, is then the first.
  res.once('close', () => { afterCompleteRequests(socket, then) })
}

const answered = new WeakSet<Socket>()

/**
 * An Error response written straight to a socket, for requests that never became a request object
 * (refused by Node's parser). It carries what every response of the service carries: Date, a
 * fresh X-Request-Id (also logged) and nosniff; and Connection: close, as the connection ends.
 */
function rawErrorResponse (error: ApiError, requestId: string): string {
  const body = JSON.stringify(error.toBody())
  return `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\n` +
    `Date: ${new Date().toUTCString()}\r\nX-Request-Id: ${requestId}\r\nX-Content-Type-Options: nosniff\r\n` +
    'Cache-Control: no-store\r\n' +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
}

/**
 * Fastify's clientErrorHandler: requests Node's parser refuses never reach a route, and Node (or
 * Fastify's default) would answer them with an empty body or another JSON shape. Answer them with
 * the Error object too, then close the connection, whose framing can no longer be trusted.
 *
 * The answer waits for the responses to the requests read before the bad bytes on this
 * connection (pipelining): a create followed in the same write by garbage gets its 201 first, then
 * the 400. Answering at once would put the 400 where the client expects the create's answer, and
 * a client retrying that "failed" create would store the animal twice.
 */
export function clientErrorHandler (this: FastifyInstance, err: ParserError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  // The parser stays in its error state: more bytes on this socket report the same error again.
  if (answered.has(socket)) return
  answered.add(socket)
  const error = toClientError(err)
  const requestId = randomUUID()
  this.log.debug({ reqId: requestId, err: { code: err.code, message: err.message } }, 'client error')
  afterCompleteRequests(socket, () => {
    if (socket.destroyed) return
    if (socket.writable) socket.end(rawErrorResponse(error, requestId))
    else socket.destroy()
  })
}

/**
 * CONNECT never reaches Fastify: Node hands it to a 'connect' listener with the bare socket (and
 * without one drops the connection unanswered). This server is no proxy: give it a response object
 * and route it like any other method, so it gets the same answer another unknown method gets
 * (401 under /v1 without a key, 405 with Allow on a listed path, 404 elsewhere), with every
 * header and hook of a routed request. The connection then closes: the bytes after a CONNECT's
 * head are not HTTP to this server.
 */
export function connectAsRequest (app: FastifyInstance): (request: IncomingMessage, socket: Duplex) => void {
  return (request, socket) => {
    const res = new ServerResponse(request)
    res.shouldKeepAlive = false
    res.assignSocket(socket as Socket)
    res.on('finish', () => {
      res.detachSocket(socket as Socket)
      ;(socket as Socket).destroySoon()
    })
    app.server.emit('request', request, res)
  }
}
