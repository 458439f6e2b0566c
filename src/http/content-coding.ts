/*
 * Content codings of the answers with a body worth compressing (the /v1 reads and the documents):
 * which coding an Accept-Encoding header asks for (RFC 9110 §12.5.3, negotiated by `negotiator`),
 * the compressed bytes (node:zlib) and the entity tag of each coding.
 *
 * Why not @fastify/compress: it compresses in an onSend hook, every response again on every
 * request, and sends the identity ETag (or none) with the compressed bytes. A 100-pet page
 * (6.5 KB of JSON) costs about 40 µs of CPU to gzip (level 6) and 80 µs to brotli (quality 5),
 * while the cached read it would wrap costs a few µs; here a cached representation is compressed
 * once per coding, on the first request that asks for it, and the bytes are kept beside its
 * identity body, with a tag of their own.
 *
 * The decisions:
 * - Offered codings: br, then gzip, then identity; the client's q-values decide, ties go to the
 *   smaller coding (br). `*` stands for every coding the header does not name; `identity;q=0` or
 *   `*;q=0` (without identity named) refuses identity. A header that accepts none of the three is
 *   disregarded (RFC 9110 §12.1): identity is sent, never 406.
 * - A body under COMPRESS_MIN_BYTES stays identity when identity is acceptable: a gzip header and
 *   trailer (18 bytes) and the work are not worth it on a few hundred bytes. Errors and 201s are
 *   always under it (a pet is at most a few hundred bytes) and are never compressed.
 * - Each coding is a representation of its own with a strong tag: the identity tag with `-gzip` or
 *   `-br` inside the quotes (RFC 9110 §8.8.3.3). The compressed bytes are a function of the identity
 *   bytes and the fixed parameters below, so a tag always names one byte sequence from one build.
 * - No absent header costs anything: an absent Accept-Encoding returns identity at once, and a
 *   present one is negotiated once per distinct header value (a small map keyed by the raw value).
 */
import Negotiator from 'negotiator'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

export type Coding = 'br' | 'gzip' | 'identity'
export type Compressed = Exclude<Coding, 'identity'>

/** Bodies shorter than this (bytes) are sent as they are when identity is acceptable. */
export const COMPRESS_MIN_BYTES = 1024

/** A coded representation: its bytes and its strong entity tag. */
export interface Coded {
  body: Buffer
  etag: string
}

/** Something with an identity body and tag, and room for its coded forms (filled on first use). */
export interface Codable {
  body: string | Buffer
  etag: string
  gzip?: Coded | undefined
  br?: Coded | undefined
}

/** What one Accept-Encoding value chooses: for a body of COMPRESS_MIN_BYTES or more, and for a smaller one. */
interface Choice {
  large: Coding
  small: Coding
}

const OFFERED = ['br', 'gzip', 'identity']
/** negotiator takes the server's order for ties (its `preferred` option), which its types omit. */
type Encodings = (available: readonly string[], options: { preferred: readonly string[] }) => string[]

function negotiate (header: string): Choice {
  const negotiator = new Negotiator({ headers: { 'accept-encoding': header } })
  const order = (negotiator.encodings as Encodings)(OFFERED, { preferred: OFFERED }) as Coding[]
  const large = order[0] ?? 'identity'
  return { large, small: order.includes('identity') ? 'identity' : large }
}

/** Choices by raw header value. Bounded: a client sending ever new values only empties it. */
const choices = new Map<string, Choice>()
const MAX_CHOICES = 256

/** The coding to send a body of `bytes` bytes in, for this Accept-Encoding value. */
export function chooseCoding (header: string | undefined, bytes: number): Coding {
  if (header === undefined) return 'identity'
  let choice = choices.get(header)
  if (choice === undefined) {
    if (choices.size >= MAX_CHOICES) choices.clear()
    choice = negotiate(header)
    choices.set(header, choice)
  }
  return bytes < COMPRESS_MIN_BYTES ? choice.small : choice.large
}

/**
 * Compresses `body` in `coding`: gzip at zlib's default level 6, brotli at quality 5 (on a 100-pet
 * page within 10 % of quality 11's size at 1/70 of its CPU); `best` (for a body made once per
 * process, such as the OpenAPI document) uses gzip 9 and brotli 11. The result owns exactly its
 * bytes (zlib's output is a view into a 16 KiB chunk, which a cached variant would keep alive).
 */
export function compress (body: string | Buffer, coding: Compressed, best = false): Buffer {
  const input = typeof body === 'string' ? Buffer.from(body) : body
  const out = coding === 'gzip'
    ? gzipSync(input, { level: best ? 9 : 6 })
    : brotliCompressSync(input, { params: { [constants.BROTLI_PARAM_QUALITY]: best ? 11 : 5, [constants.BROTLI_PARAM_SIZE_HINT]: input.length } })
  if (out.byteOffset === 0 && out.buffer.byteLength === out.length) return out
  const own = Buffer.allocUnsafeSlow(out.length)
  out.copy(own)
  return own
}

/** The strong tag of `coding` for the identity tag `etag` (`"abc"` → `"abc-gzip"`). */
export function codedTag (etag: string, coding: Compressed): string {
  return `${etag.slice(0, -1)}-${coding}"`
}

/** The identity tag a coded tag stands for (`"abc-gzip"` → `"abc"`); any other tag as it is. */
export function identityTag (tag: string): string {
  if (tag.endsWith('-gzip"')) return `${tag.slice(0, -6)}"`
  if (tag.endsWith('-br"')) return `${tag.slice(0, -4)}"`
  return tag
}

/**
 * The coded form of `rep`, made on first use and kept on it. `made` is told when bytes were added
 * (the read cache accounts for them).
 */
export function codedOf (rep: Codable, coding: Compressed, best = false, made?: (rep: Codable) => void): Coded {
  const kept = rep[coding]
  if (kept !== undefined) return kept
  const coded: Coded = { body: compress(rep.body, coding, best), etag: codedTag(rep.etag, coding) }
  rep[coding] = coded
  made?.(rep)
  return coded
}
