import { hash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** Whether an If-None-Match value names this entity tag (RFC 9110 §13.1.2: weak comparison, or *). */
export function ifNoneMatchHits (header: string, etag: string): boolean {
  if (header.trim() === '*') return true
  for (const part of header.split(',')) {
    let tag = part.trim()
    if (tag.startsWith('W/')) tag = tag.slice(2)
    if (tag === etag) return true
  }
  return false
}

/** A strong ETag: SHA-1 of the exact bytes sent, so equal bodies and only equal bodies share it. */
export function etagOf (body: string | Buffer): string {
  return `"${hash('sha1', body, 'base64url')}"`
}

/**
 * onSend hook for a 200 JSON representation: its strong ETag (the one the route set, computed once
 * with a cached representation; otherwise computed here), revalidation instead of no-store, and 304
 * with no body when If-None-Match already names it.
 */
export async function strongEtag (request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  if (reply.statusCode !== 200) return payload
  let etag = reply.getHeader('etag')
  if (typeof etag !== 'string') {
    if (typeof payload !== 'string') return payload
    etag = etagOf(payload)
    reply.header('etag', etag)
  }
  reply.header('cache-control', 'private, no-cache')
  const inm = request.headers['if-none-match']
  if (inm !== undefined && ifNoneMatchHits(inm, etag)) {
    reply.code(304)
    reply.removeHeader('content-type')
    return ''
  }
  return payload
}
