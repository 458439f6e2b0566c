import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { listedCodings } from '../http/content-coding.js'
import { connectAsRequest, MAX_TARGET_LENGTH, targetFormProblem, trackResponse, uriTooLong, validHost, versionNotSupported } from '../http/client-errors.js'
import { repeatedSingleton } from '../http/repeated-headers.js'

/**
 * What is wrong at the edge of a request, as the Error that answers it, or undefined. The rules are the MUSTs of
 * RFC 9110/9112 that Node's parser leaves to the server:
 * - a request line whose HTTP major version is not 1 → 505 (RFC 9110 §15.6.6), and one without a
 *   version (which Node's parser reads as HTTP/0.9) → 400: Node passes both and would have them
 *   answered as 1.1;
 * - a request target longer than MAX_TARGET_LENGTH → 414; one with a fragment → 400 (the
 *   origin-form is path and query, RFC 9112 §3.2.1; a client never sends `#`); one of none of the
 *   forms a server takes (client-errors.ts: `*?x`, `foo`, an absolute-form with a bad authority) → 400.
 *   The target is the one the client sent (`originalUrl` when the errors plugin routed it again);
 * - Host: an HTTP/1.1 request without it, with it twice, or with a value that is not
 *   `uri-host [":" port]` → 400 (RFC 9112 §3.2). Authorization and Content-Type twice → 400 too
 *   (repeated-headers.ts);
 * - Transfer-Encoding in an HTTP/1.0 request → 400: its framing is faulty (RFC 9112 §6.1), whatever
 *   else it says; a coding other than chunked → 501 (the server does not understand it, RFC 9112
 *   §6.1). Node's parser itself refuses chunked not last or twice, and Transfer-Encoding with
 *   Content-Length.
 * Each is answered with `Connection: close`: after a framing the server does not trust, or a request
 * it refused unread, the next bytes on the connection are not known to start a request.
 */
function edgeProblem (req: IncomingMessage): ApiError | undefined {
  // A line without a version is read as HTTP/0.9 (as is `HTTP/0.9`): a request line that is not HTTP/1.x, 400.
  if (req.httpVersion === '0.9') return new ApiError('bad_request', 'the request line needs an HTTP version (HTTP/1.1); HTTP/0.9 is not served')
  if (req.httpVersionMajor !== 1) return versionNotSupported(req.httpVersion)
  const url = req.originalUrl ?? req.url ?? ''
  if (url.length > MAX_TARGET_LENGTH) return uriTooLong()
  if (url.includes('#')) return new ApiError('bad_request', 'the request target must not contain a fragment (#)')
  const form = targetFormProblem(url)
  if (form !== undefined) return new ApiError('bad_request', form)
  const host = req.headers.host
  if (host === undefined) {
    if (req.httpVersion === '1.1') return new ApiError('bad_request', 'an HTTP/1.1 request needs a Host header')
  } else if (!validHost(host)) {
    return new ApiError('bad_request', 'the Host header must be a host name or address with an optional port (RFC 3986 uri-host [":" port])')
  }
  const repeated = repeatedSingleton(req.rawHeaders)
  if (repeated !== undefined) return new ApiError('bad_request', `the ${repeated} header must be sent once`)
  const te = req.headers['transfer-encoding']
  if (te !== undefined) {
    if (req.httpVersion !== '1.1') return new ApiError('bad_request', 'Transfer-Encoding is not allowed in an HTTP/1.0 request')
    const unknown = listedCodings(te).filter(c => c !== 'chunked')
    if (unknown.length > 0) return new ApiError('not_implemented', `transfer coding ${unknown.join(', ')} is not supported; send the body with chunked alone, or with Content-Length`)
  }
  return undefined
}

/**
 * Hardening at the edge of every request: `X-Content-Type-Options: nosniff` on every response, the
 * edge rules above, CONNECT routed like any other method instead of a dropped connection, and the
 * responses in line on each connection kept for the clientError handler (client-errors.ts).
 */
async function hardening (app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', (request, reply, done) => {
    // Browsers take a response's Content-Type as it is, never guessing another from the body.
    reply.header('x-content-type-options', 'nosniff')
    const problem = edgeProblem(request.raw)
    if (problem !== undefined) reply.header('connection', 'close')
    done(problem)
  })
  app.server.on('connect', connectAsRequest(app))
  // Before Fastify's own listener: the clientError handler answers after the responses in line.
  app.server.prependListener('request', trackResponse)
}

export default fp(hardening, { name: 'petstore-hardening' })
