import { hash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'

/** The entity tags of an If-Match / If-None-Match list (`*` stays `*`), each with or without W/. */
function tags (header: string): string[] {
  return header.split(',').map(t => t.trim()).filter(t => t !== '')
}

/** Whether an If-None-Match value names this entity tag (RFC 9110 §13.1.2: weak comparison, or *). */
export function ifNoneMatchHits (header: string, etag: string): boolean {
  if (header.trim() === '*') return true
  return tags(header).some(tag => (tag.startsWith('W/') ? tag.slice(2) : tag) === etag)
}

/** Whether an If-Match value holds for this entity tag (RFC 9110 §13.1.1: strong comparison, or *). */
export function ifMatchHolds (header: string, etag: string): boolean {
  if (header.trim() === '*') return true
  return tags(header).some(tag => tag === etag)
}

/**
 * What a 304 sends so that it goes out with no body and no Content-Length (RFC 9110 §8.6): for a
 * HEAD request an empty stream, because Fastify's own HEAD hook (which runs after every other
 * onSend hook) fails on null with a 500 and gives '' or no payload `Content-Length: 0`; it drains
 * the stream and sends nothing. Otherwise undefined: `reply.send()` then writes no Content-Length
 * (an onSend hook returns null instead, as undefined there means "payload unchanged").
 */
export function headNoBody (request: FastifyRequest): Readable | undefined {
  return request.method === 'HEAD' ? Readable.from([]) : undefined
}

/** A strong ETag: SHA-1 of the exact bytes sent, so equal bodies and only equal bodies share it. */
export function etagOf (body: string | Buffer): string {
  return `"${hash('sha1', body, 'base64url')}"`
}

/**
 * onSend hook for a 200 JSON representation: its strong ETag (the one the route set, computed once
 * with a cached representation; otherwise computed here), revalidation instead of no-store, and the
 * preconditions of RFC 9110 §13.2.2, in its order:
 * 1. `If-Match` that names no current tag → 412 `precondition_failed` (a client that holds an old
 *    representation learns it is stale instead of reading a newer one as if it were its own);
 * 2. `If-None-Match` that names the current tag → 304, with no body and no Content-Length
 *    (RFC 9110 §8.6: a 304 must not claim the length of a body it does not send).
 * `If-Modified-Since` and `If-Unmodified-Since` are ignored: no response carries Last-Modified
 * (RFC 9110 §13.1.3–13.1.4: a recipient ignores them then).
 * Callback-style: nothing here waits, and an async hook would cost a promise per response.
 */
export function strongEtag (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void): void {
  done(null, conditional(request, reply, payload))
}

/** What strongEtag sends: the payload, or the 412's body, or nothing (null, a 304). */
function conditional (request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  if (reply.statusCode !== 200) return payload
  let etag = reply.getHeader('etag')
  if (typeof etag !== 'string') {
    if (typeof payload !== 'string') return payload
    etag = etagOf(payload)
    reply.header('etag', etag)
  }
  const im = request.headers['if-match']
  if (im !== undefined && !ifMatchHolds(im, etag)) {
    const error = new ApiError('precondition_failed', 'If-Match names no current entity tag of this resource: it changed since it was read')
    // The 200's own headers do not describe this answer: its tag, and listPets' next-page Link.
    reply.removeHeader('etag')
    const link = reply.getHeader('link')
    if (typeof link === 'string' && link.endsWith('rel="next"')) reply.removeHeader('link')
    reply.code(error.statusCode).header('cache-control', 'no-store').type('application/json; charset=utf-8')
    return JSON.stringify(error.toBody())
  }
  reply.header('cache-control', 'private, no-cache')
  const inm = request.headers['if-none-match']
  if (inm !== undefined && ifNoneMatchHits(inm, etag)) {
    reply.code(304)
    reply.removeHeader('content-type')
    return headNoBody(request) ?? null
  }
  return payload
}
