import { hash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import type { Representation } from '../services/pet-reads.js'
import { JSON_TYPE } from './media-types.js'
import { chooseCoding, codedOf, identityTag, type Codable } from './content-coding.js'

function tags (header: string): string[] {
  return header.split(',').map(t => t.trim()).filter(t => t !== '')
}

/** RFC 9110 §13.1.2: weak comparison. */
export function ifNoneMatchHits (header: string, etag: string): boolean {
  if (header.trim() === '*') return true
  return tags(header).some(tag => (tag.startsWith('W/') ? tag.slice(2) : tag) === etag)
}

/** RFC 9110 §13.1.1: strong comparison; any coding's tag of the same content holds (a coding is not a change). */
export function ifMatchHolds (header: string, etag: string): boolean {
  if (header.trim() === '*') return true
  return tags(header).some(tag => identityTag(tag) === etag)
}

export function varyOnCoding (reply: FastifyReply): void {
  varyOn(reply, 'Accept-Encoding')
}

/** Adds `name` to Vary, after what is there (CORS's `Origin`). */
export function varyOn (reply: FastifyReply, name: string): void {
  const vary = reply.getHeader('vary')
  reply.header('vary', vary === undefined ? name : `${String(vary)}, ${name}`)
}

// A create's target is the collection, which has no tag that changes with it; a precondition is refused,
// never ignored (RFC 9110 §13.2.1).
export function refusePreconditions (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const name = request.headers['if-match'] !== undefined ? 'If-Match' : request.headers['if-none-match'] !== undefined ? 'If-None-Match' : undefined
  if (name === undefined) done()
  else done(new ApiError('invalid_parameter', `header '${name}' is not supported on a create: it has no entity tag to compare with, so the request is refused rather than the condition ignored`))
}

// A 304 has no body or Content-Length (RFC 9110 §8.6); Fastify's HEAD hook fails on null, so HEAD gets an empty stream.
export function headNoBody (request: FastifyRequest): Readable | undefined {
  return request.method === 'HEAD' ? Readable.from([]) : undefined
}

export function etagOf (body: string | Buffer): string {
  return `"${hash('sha1', body, 'base64url')}"`
}

export const REVALIDATE = 'private, no-cache'

// The preconditions of RFC 9110 §13.2.2 in order: If-Match → 412, If-None-Match → 304. If-Modified-Since
// and If-Unmodified-Since are ignored: no response carries Last-Modified (§13.1.3–13.1.4).
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
