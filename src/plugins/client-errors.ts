import { type IncomingMessage, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'

/** What Node's HTTP parser refused, as one of our errors. */
function toClientError (code: string | undefined): ApiError {
  if (code === 'HPE_HEADER_OVERFLOW') return new ApiError('header_too_large', 'the request line and headers are larger than the server accepts (16 KiB)')
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new ApiError('request_timeout', 'the request was not received in time')
  return new ApiError('bad_request', 'the request is not valid HTTP/1.1 (request line, header or framing)')
}

/**
 * Fastify's clientErrorHandler: requests Node's parser refuses never reach a route, and Node (or
 * Fastify's default) would answer them with an empty body or another JSON shape. Answer them with
 * the Error object too, then close the connection, whose framing can no longer be trusted.
 */
export function clientErrorHandler (this: FastifyInstance, err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const error = toClientError(err.code)
  this.log.debug({ err: { code: err.code, message: err.message } }, 'client error')
  if (socket.writable) {
    const body = JSON.stringify(error.toBody())
    socket.write(
      `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
    )
  }
  socket.destroy()
}

/**
 * CONNECT never reaches Fastify: without a listener Node drops the connection with no answer.
 * Answer it like any other method the API does not have.
 */
export function refuseConnect (request: IncomingMessage, socket: Duplex): void {
  const body = JSON.stringify(new ApiError('method_not_allowed', `CONNECT is not allowed on ${request.url ?? '/'}`).toBody())
  socket.end(
    'HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}
