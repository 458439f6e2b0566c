// Content codings of the reads and documents (RFC 9110 §12.5.3; rules: docs/reference/behaviour.md,
// "Compressed answers"). Not @fastify/compress: it sends the identity ETag with the compressed bytes
// (test/routes/compression.test.ts, "each coding with its own ETag", fails with it), and compresses
// every response again in onSend: a 100-pet page costs about 40 µs of CPU in gzip and 80 µs in
// brotli against a few µs for the cached read. Here a representation is compressed once per coding,
// on the first request for it, and kept with a tag of its own.
import Negotiator from 'negotiator'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

export type Coding = 'br' | 'gzip' | 'identity'
export type Compressed = Exclude<Coding, 'identity'>

export const COMPRESS_MIN_BYTES = 1024

export interface Coded {
  body: Buffer
  etag: string
}

export interface Codable {
  body: string | Buffer
  etag: string
  gzip?: Coded | undefined
  br?: Coded | undefined
}

const OFFERED = ['br', 'gzip', 'identity']
// negotiator's types omit its `preferred` option (the server's order for ties).
type Encodings = (available: readonly string[], options: { preferred: readonly string[] }) => string[]

// `x-gzip` is gzip (RFC 9110 §8.4.1.3: a recipient SHOULD consider them equivalent); negotiator knows only `gzip`.
const X_GZIP = /(^|,)(\s*)x-gzip(?=\s*(?:[;,]|$))/gi

function negotiate (header: string) {
  const negotiator = new Negotiator({ headers: { 'accept-encoding': header.replace(X_GZIP, '$1$2gzip') } })
  const order = (negotiator.encodings as Encodings)(OFFERED, { preferred: OFFERED }) as Coding[]
  const large = order[0] ?? 'identity'
  return { large, small: order.includes('identity') ? 'identity' : large }
}

/** The codings a Content-Encoding or Transfer-Encoding field value lists, lower case, in order. */
export function listedCodings (value: string | undefined): string[] {
  return (value ?? '').split(',').map(c => c.trim().toLowerCase()).filter(c => c !== '')
}

const choices = new Map<string, ReturnType<typeof negotiate>>()
const MAX_CHOICES = 256

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

// The result owns exactly its bytes: zlib's output is a view into a larger chunk a kept form would pin.
export function compress (body: string | Buffer, coding: Compressed, best = false): Buffer {
  const input = typeof body === 'string' ? Buffer.from(body) : body
  const out = coding === 'gzip'
    ? gzipSync(input, { level: best ? 9 : 6 })
    : brotliCompressSync(input, { params: { [constants.BROTLI_PARAM_QUALITY]: best ? 11 : 5, [constants.BROTLI_PARAM_SIZE_HINT]: input.length } })
  if (out.byteOffset === 0 && out.buffer.byteLength === out.length) return out
  return Buffer.from(out.buffer.slice(out.byteOffset, out.byteOffset + out.length))
}

/** The identity tag a coding's tag was made from (`"t-gzip"` → `"t"`), or the tag as it is. */
export function identityTag (tag: string): string {
  return tag.replace(/-(?:gzip|br)"$/, '"')
}

export function codedOf (rep: Codable, coding: Compressed, best = false, made?: (rep: Codable) => void): Coded {
  const kept = rep[coding]
  if (kept !== undefined) return kept
  const coded: Coded = { body: compress(rep.body, coding, best), etag: `${rep.etag.slice(0, -1)}-${coding}"` }
  rep[coding] = coded
  made?.(rep)
  return coded
}
