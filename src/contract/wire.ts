import { once } from 'node:events'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, connect as netConnect, type Socket } from 'node:net'
import { buffer } from 'node:stream/consumers'
import { connect as tlsConnect } from 'node:tls'
import type { SeenResponse } from './response-check.js'

/*
 * HTTP as `petstore conformance` speaks it to a deployment: one request per connection through
 * node:http(s) (answers exactly as sent: no decompression, no redirects followed), and a raw
 * connection (node:net / node:tls) that writes requests byte for byte and reads the answers' framing
 * itself, so a proxy that breaks Content-Length, chunked encoding, keep-alive or HEAD is seen.
 */

/** An answer as node:http gives it: header names in lower case. */
export interface Answer extends SeenResponse {
  headers: IncomingHttpHeaders
}

export interface Target {
  /** Origin and base path, e.g. https://pets.example.com */
  base: URL
  timeoutMs: number
}

/** One request on a fresh connection; resolves with the answer or rejects with a transport error. */
export function send (target: Target, method: string, url: string, headers: Record<string, string>, body?: string | Buffer): Promise<Answer> {
  const where = new URL(url, target.base)
  const request = where.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const req = request(where, { method, headers: { connection: 'close', ...headers }, agent: false }, (res) => {
      // As bytes, then UTF-8: a byte order mark stays in the body (and fails JSON.parse) as sent.
      buffer(res).then(body => resolve({ method, url, status: res.statusCode ?? 0, headers: res.headers, body: body.toString('utf8') }), reject)
    })
    req.setTimeout(target.timeoutMs, () => req.destroy(new Error(`no answer within ${target.timeoutMs} ms`)))
    req.on('error', reject)
    if (headers.expect?.toLowerCase() === '100-continue') {
      // The body goes only once the server asks for it; an answer first (413) ends the exchange.
      req.on('continue', () => req.end(body))
      req.flushHeaders()
      req.on('response', (res) => res.on('end', () => req.destroy()))
    } else {
      req.end(body)
    }
  })
}

export interface RawAnswer {
  status: number
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Map<string, string>
  body: Buffer
  /** How the body was delimited. */
  framing: 'content-length' | 'chunked' | 'none' | 'close'
}

/** An answer not as expected (on the wire, or against the document): what was expected, what came instead, and the request it concerns when known. */
export class Unexpected extends Error {
  constructor (readonly expected: string, readonly got: string, readonly where?: string) {
    super(`expected ${expected}, got ${got}`)
    this.name = 'Unexpected'
  }
}

const show = (b: Buffer): string => JSON.stringify(b.subarray(0, 60).toString('latin1'))

/** A raw HTTP/1.1 connection: requests are written to `socket` as given, answers parsed strictly. */
export class RawConnection {
  private buffered = Buffer.alloc(0)
  private ended = false
  /** What the reader waits for, named in the timeout's Unexpected. */
  private awaiting = ''
  private readonly chunks: AsyncIterator<Buffer>

  private constructor (readonly socket: Socket, timeoutMs: number) {
    // An idle socket fails the read awaited (or the next one) with this error; the 'error' listener
    // keeps it from being thrown when no read is pending.
    socket.setTimeout(timeoutMs, () => socket.destroy(new Unexpected(this.awaiting, `nothing more within ${timeoutMs} ms after ${show(this.buffered)}`)))
    socket.on('error', () => {})
    this.chunks = socket[Symbol.asyncIterator]()
  }

  static async open (target: Target): Promise<RawConnection> {
    const { hostname, port, protocol } = target.base
    const host = hostname.replace(/^\[|\]$/g, '')
    const socket = protocol === 'https:'
      ? tlsConnect({ host, port: Number(port === '' ? 443 : port), servername: isIP(host) === 0 ? host : undefined, ALPNProtocols: ['http/1.1'] })
      : netConnect({ host, port: Number(port === '' ? 80 : port) })
    try {
      // once() rejects on the socket's 'error' event, and on the timeout's abort.
      await once(socket, protocol === 'https:' ? 'secureConnect' : 'connect', { signal: AbortSignal.timeout(target.timeoutMs) })
    } catch (err) {
      socket.destroy()
      throw (err as Error).name === 'AbortError' ? new Error(`no connection within ${target.timeoutMs} ms`) : err
    }
    return new RawConnection(socket, target.timeoutMs)
  }

  /** Waits until more bytes arrive or the peer closes; throws when it has closed already or the timeout passes. */
  private async more (what: string): Promise<void> {
    if (this.ended) throw new Unexpected(what, `the connection closed after ${show(this.buffered)}`)
    this.awaiting = what
    const next = await this.chunks.next()
    if (next.done === true) this.ended = true
    else this.buffered = Buffer.concat([this.buffered, next.value])
  }

  private async line (what: string): Promise<string> {
    for (;;) {
      const end = this.buffered.indexOf('\r\n')
      if (end >= 0) {
        const line = this.buffered.subarray(0, end).toString('latin1')
        this.buffered = this.buffered.subarray(end + 2)
        return line
      }
      await this.more(what)
    }
  }

  private async bytes (n: number, what: string): Promise<Buffer> {
    while (this.buffered.length < n) await this.more(what)
    const out = this.buffered.subarray(0, n)
    this.buffered = this.buffered.subarray(n)
    return out
  }

  /** Reads one answer to a request of `method`; throws Unexpected where the bytes break HTTP/1.1. */
  async read (method: string): Promise<RawAnswer> {
    const statusLine = await this.line('a status line')
    const m = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine)
    if (m === null) throw new Unexpected('a status line (HTTP/1.1 NNN …)', JSON.stringify(statusLine.slice(0, 60)))
    const status = Number(m[1])
    const headers = new Map<string, string>()
    for (;;) {
      const header = await this.line('the end of the header section')
      if (header === '') break
      const colon = header.indexOf(':')
      if (colon <= 0) throw new Unexpected('a header line (name: value)', JSON.stringify(header.slice(0, 60)))
      const name = header.slice(0, colon).trim().toLowerCase()
      const value = header.slice(colon + 1).trim()
      headers.set(name, headers.has(name) ? `${headers.get(name)!}, ${value}` : value)
    }
    // 1xx answers precede the final one.
    if (status >= 100 && status < 200) return await this.read(method)
    if (method === 'HEAD' || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0), framing: 'none' }
    const transferEncoding = headers.get('transfer-encoding')
    if (transferEncoding !== undefined) {
      if (transferEncoding.toLowerCase() !== 'chunked') throw new Unexpected('Transfer-Encoding: chunked (the only coding a client must decode)', `Transfer-Encoding: ${transferEncoding}`)
      if (headers.has('content-length')) throw new Unexpected('either Transfer-Encoding or Content-Length', 'both')
      const parts: Buffer[] = []
      for (;;) {
        const sizeLine = await this.line('a chunk size line')
        const size = /^([0-9A-Fa-f]{1,16})[ \t]*(;.*)?$/.exec(sizeLine)
        if (size === null) throw new Unexpected('a chunk size in hexadecimal', JSON.stringify(sizeLine.slice(0, 60)))
        const n = Number.parseInt(size[1]!, 16)
        if (n === 0) {
          while ((await this.line('the end of the trailer section')) !== '');
          break
        }
        parts.push(await this.bytes(n, `a chunk of ${n} bytes`))
        const after = await this.bytes(2, 'CRLF after a chunk')
        if (after.toString('latin1') !== '\r\n') throw new Unexpected(`CRLF after a chunk of ${n} bytes`, show(after))
      }
      return { status, headers, body: Buffer.concat(parts), framing: 'chunked' }
    }
    const contentLength = headers.get('content-length')
    if (contentLength !== undefined) {
      if (!/^\d+$/.test(contentLength)) throw new Unexpected('Content-Length as one decimal number', JSON.stringify(contentLength))
      const body = await this.bytes(Number(contentLength), `a body of ${contentLength} bytes (Content-Length)`)
      return { status, headers, body, framing: 'content-length' }
    }
    // Neither: the body runs until the connection closes.
    const body = await this.untilClosed('the connection to close (no Content-Length, not chunked)')
    this.buffered = Buffer.alloc(0)
    return { status, headers, body, framing: 'close' }
  }

  /** Bytes received past the answers read so far. */
  leftover (): Buffer {
    return this.buffered
  }

  /** Waits for the peer to close (after Connection: close, or ending a body not otherwise delimited), then gives the bytes that came after the answers read. */
  async untilClosed (what = 'the connection to close'): Promise<Buffer> {
    while (!this.ended) await this.more(what)
    return this.buffered
  }
}
