/*
 * Representations: what a read answers with, in one place. A representation is a serialized body
 * with its strong ETag (and, for a page, its Link); it is answered in the content coding the
 * client accepts (content-coding.ts), revalidated (If-None-Match → 304, If-Match → 412), and kept
 * finished in the read cache below, so a cached read costs no database work, no serialization and
 * no hashing. The rules: docs/reference/behaviour.md ("Conditional requests", "Compressed answers");
 * why the cache is safe: docs/explanation/read-cache.md.
 */
import { hash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import { ApiError } from '../errors.js'
import type { Metrics } from '../observability/metrics.js'
import { chooseCoding, codedOf, identityTag, type Codable, type Coded } from './content-coding.js'
import { JSON_TYPE } from './media-types.js'

/** The body stays a string: a small Buffer would keep a shared slab alive after eviction. */
export interface Representation extends Codable {
  bytes: number
  link?: string | undefined
  /** Its key in the read cache, once kept. */
  key?: string | undefined
}

/** A read's body as the route's 200 schema serializes it (the serializer Fastify compiled for the route). */
export function serialized (reply: FastifyReply, payload: object): string {
  // Fastify's types take an object; an array is serialized by its schema as well.
  return reply.serializeInput(payload as Record<string, unknown>, '200', 'application/json') as string
}

/** A representation of a serialized body. */
export function represent (body: string | Buffer, link?: string): Representation {
  const etag = `"${hash('sha1', body, 'base64url')}"`
  return { body, bytes: Buffer.byteLength(body), etag, link, gzip: undefined, br: undefined, key: undefined }
}

/** Whether an If-Match or If-None-Match value is `*` or lists `etag`, each tag it lists read by `compared` first. */
function listsTag (header: string, etag: string, compared: (tag: string) => string): boolean {
  return header.trim() === '*' || header.split(',').some(tag => compared(tag.trim()) === etag)
}

/** RFC 9110 §13.1.2: weak comparison. */
const weak = (tag: string): string => tag.startsWith('W/') ? tag.slice(2) : tag

/** Adds `name` to Vary, after what is there (CORS's `Origin`). */
export function varyOn (reply: FastifyReply, name: string): void {
  const vary = reply.getHeader('vary')
  reply.header('vary', vary === undefined ? name : `${String(vary)}, ${name}`)
}

// A create's target is the collection, which has no tag that changes with it; a precondition is refused,
// never ignored (RFC 9110 §13.2.1).
export async function refusePreconditions (request: FastifyRequest): Promise<void> {
  const name = request.headers['if-match'] !== undefined ? 'If-Match' : request.headers['if-none-match'] !== undefined ? 'If-None-Match' : undefined
  if (name !== undefined) throw new ApiError('invalid_parameter', `header '${name}' is not supported on a create: it has no entity tag to compare with, so the request is refused rather than the condition ignored`)
}

export interface AnswerOptions {
  cacheControl: string
  /** JSON unless said. */
  contentType?: string
  /** Compress at the best settings: for a document made once per process. */
  best?: boolean
  /** The read cache holding the representation: a coding made for it is counted against its budget. */
  cache?: ReadCache
}

/** Reads revalidate on every use: a private cache may keep them, asking each time whether they changed. */
export const REVALIDATE = 'private, no-cache'

/**
 * Answers a read with `rep`: the preconditions of RFC 9110 §13.2.2 in order (If-Match → 412,
 * If-None-Match → 304; If-Modified-Since and If-Unmodified-Since are ignored: no response carries
 * Last-Modified), in the coding Accept-Encoding chooses, each coding made once and kept with a tag
 * of its own. A 304 gets an empty stream for every method: Fastify's own HEAD hook needs one, and a
 * GET's 304 then has no Content-Length either.
 */
export function answerRead (request: FastifyRequest, reply: FastifyReply, rep: Representation, opts: AnswerOptions): string | Buffer | Readable {
  const headers = request.headers
  const im = headers['if-match']
  // RFC 9110 §13.1.1: strong comparison; any coding's tag of the same content holds (a coding is not a change).
  if (im !== undefined && !listsTag(im, rep.etag, identityTag)) {
    throw new ApiError('precondition_failed', 'If-Match names no current entity tag of this resource: it changed since it was read')
  }
  const coding = chooseCoding(headers['accept-encoding'], rep.bytes)
  const coded = coding === 'identity' ? rep : codedOf(rep, coding, opts.best, opts.cache?.grew)
  reply.header('etag', coded.etag)
  if (rep.link !== undefined) reply.header('link', rep.link)
  reply.header('cache-control', opts.cacheControl)
  varyOn(reply, 'Accept-Encoding')
  const inm = headers['if-none-match']
  if (inm !== undefined && listsTag(inm, coded.etag, weak)) {
    reply.code(304)
    return Readable.from([])
  }
  reply.header('content-type', opts.contentType ?? JSON_TYPE)
  if (coding !== 'identity') reply.header('content-encoding', coding)
  return coded.body
}

/** An entry's heap cost beyond its body and Link (test/http/representations.test.ts checks it bounds the real heap). */
export const ENTRY_OVERHEAD = 384
export const CODED_OVERHEAD = 256

const codedSize = (coded: Coded | undefined): number => coded === undefined ? 0 : coded.body.length + CODED_OVERHEAD

// V8 keeps a string that is not Latin-1 at two bytes a character.
const sizeOf = (rep: Representation): number =>
  (rep.bytes === rep.body.length ? rep.bytes : 2 * rep.body.length) + (rep.link?.length ?? 0) + ENTRY_OVERHEAD +
  codedSize(rep.gzip) + codedSize(rep.br)

/**
 * The read cache: finished getPet and listPets representations, least recently used first out,
 * bounded by READ_CACHE_MAX_MB (0: nothing is kept). Keep only what can never change: a found pet,
 * a full page the store calls final (services/pet-reads.ts, readPage).
 */
export class ReadCache {
  private readonly cache: LRUCache<string, Representation> | undefined
  private readonly counters: Metrics['readCache']

  constructor (maxBytes: number, metrics: Metrics) {
    this.cache = maxBytes > 0 ? new LRUCache<string, Representation>({ maxSize: maxBytes, sizeCalculation: sizeOf }) : undefined
    this.counters = metrics.readCache
    metrics.readCacheSize = () => ({ entries: this.cache?.size ?? 0, bytes: this.cache?.calculatedSize ?? 0 })
  }

  /** The kept representation, counted as a hit or a miss of its kind. */
  get (kind: 'pet' | 'page', key: string): Representation | undefined {
    const hit = this.cache?.get(key)
    this.counters[kind][hit === undefined ? 'misses' : 'hits'].inc()
    return hit
  }

  keep (key: string, rep: Representation): Representation {
    if (this.cache === undefined) return rep
    rep.key = key
    this.cache.set(key, rep)
    return rep
  }

  // lru-cache sizes an entry when it is set: one that gained a coding is set again.
  readonly grew = (rep: Codable): void => {
    const { key } = rep as Representation
    if (key === undefined || this.cache?.peek(key) !== rep) return
    this.cache.delete(key)
    this.cache.set(key, rep as Representation)
  }
}
