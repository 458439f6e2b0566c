import { hash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import type { Representation } from '../services/pet-reads.js'
import { JSON_TYPE } from './media-types.js'
import { chooseCoding, codedOf, identityTag, type Codable } from './content-coding.js'

/** The entity tags of an If-Match / If-None-Match list (`*` stays `*`), each with or without W/. */
function tags (header: string): string[] {
  return header.split(',').map(t => t.trim()).filter(t => t !== '')
}

/** Whether an If-None-Match value names this entity tag (RFC 9110 §13.1.2: weak comparison, or *). */
export function ifNoneMatchHits (header: string, etag: string): boolean {
  if (header.trim() === '*') return true
  return tags(header).some(tag => (tag.startsWith('W/') ? tag.slice(2) : tag) === etag)
}

/**
 * Whether an If-Match value holds for the identity entity tag `etag` (RFC 9110 §13.1.1: strong
 * comparison, or *). The tag of any coding of the same content holds too (`"abc-gzip"` for `"abc"`):
 * If-Match asks whether the resource changed, and a content coding is not a change, so a client
 * may send whichever tag it last received, whatever Accept-Encoding it sends now.
 */
export function ifMatchHolds (header: string, etag: string): boolean {
  if (header.trim() === '*') return true
  return tags(header).some(tag => identityTag(tag) === etag)
}

/** Adds Accept-Encoding to the reply's Vary, after any other field (CORS adds Origin). */
export function varyOnCoding (reply: FastifyReply): void {
  const vary = reply.getHeader('vary')
  reply.header('vary', vary === undefined ? 'Accept-Encoding' : `${String(vary)}, Accept-Encoding`)
}

/**
 * createPet's preconditions, refused rather than evaluated: the target of a create is the
 * collection, whose only representation is the first page of listPets, and that page's tag stays
 * the same while creates land past it, so If-Match or If-None-Match on it could not mean "the
 * collection did not change". Never ignored (RFC 9110 §13.2.1 requires evaluating what is
 * received): a create that carries one is not performed. A route onRequest hook (after
 * authentication, before the body is read).
 */
export function refusePreconditions (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const name = request.headers['if-match'] !== undefined ? 'If-Match' : request.headers['if-none-match'] !== undefined ? 'If-None-Match' : undefined
  if (name === undefined) done()
  else done(new ApiError('invalid_parameter', `header '${name}' is not supported on a create: it has no entity tag to compare with, so the request is refused rather than the condition ignored`))
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

/** A read's Cache-Control: the answer depends on the API key, and caches revalidate it by its ETag. */
export const REVALIDATE = 'private, no-cache'

/**
 * The answer to a read of `rep`: status and headers
 * set on `reply`, the body to send returned (undefined for a 304, which has none). The body and
 * ETag are those of the coding Accept-Encoding chooses (http/content-coding.ts): the identity ones
 * computed once, when the representation was made, a compressed one on the first request for it,
 * then kept on the representation (`made` is told, for the read cache's accounting); caches must
 * revalidate it, and `Vary: Accept-Encoding` is on every answer, identity ones too. The
 * preconditions of RFC 9110 §13.2.2, in its order:
 * 1. `If-Match` that names no current tag → 412 `precondition_failed`, thrown (a client that holds
 *    an old representation learns it is stale instead of reading a newer one as if it were its own);
 *    the tag of any coding of the current content holds (ifMatchHolds);
 * 2. `If-None-Match` that names the current tag of the chosen coding → 304, without Content-Type or
 *    body (a cache holding the gzip answer revalidates with its `-gzip` tag and sends gzip again).
 * `If-Modified-Since` and `If-Unmodified-Since` are ignored: no response carries Last-Modified
 * (RFC 9110 §13.1.3–13.1.4: a recipient ignores them then).
 */
export function answerRead (headers: IncomingHttpHeaders, reply: FastifyReply, rep: Representation, made?: (rep: Codable) => void): string | Buffer | undefined {
  const im = headers['if-match']
  if (im !== undefined && !ifMatchHolds(im, rep.etag)) {
    throw new ApiError('precondition_failed', 'If-Match names no current entity tag of this resource: it changed since it was read')
  }
  const coding = chooseCoding(headers['accept-encoding'], rep.bytes)
  const coded = coding === 'identity' ? rep : codedOf(rep, coding, false, made)
  reply.header('etag', coded.etag)
  if (rep.link !== undefined) reply.header('link', rep.link)
  reply.header('cache-control', REVALIDATE)
  varyOnCoding(reply)
  const inm = headers['if-none-match']
  if (inm !== undefined && ifNoneMatchHits(inm, coded.etag)) {
    reply.code(304)
    return undefined
  }
  reply.header('content-type', JSON_TYPE)
  if (coding !== 'identity') reply.header('content-encoding', coding)
  return coded.body
}
