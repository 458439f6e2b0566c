import { hash } from 'node:crypto'
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import { headNoBody, ifMatchHolds, ifNoneMatchHits } from './etag.js'

type Coding = 'br' | 'gzip' | 'identity'

interface Representation { body: Buffer, etag: string }

/** The q-value the Accept-Encoding header gives a coding (`*` counts for codings it does not name). */
function qualityOf (header: string, coding: Coding): number {
  let star: number | undefined
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.split(';').map(p => p.trim().toLowerCase())
    const q = params.find(p => p.startsWith('q='))
    const value = q === undefined ? 1 : Number(q.slice(2))
    const quality = Number.isFinite(value) ? value : 0
    if (name === coding) return quality
    if (name === '*') star = quality
  }
  // identity is acceptable unless refused by name or by `*;q=0` (RFC 9110 §12.5.3).
  return star ?? (coding === 'identity' ? 1 : 0)
}

/** The coding to send: the client's most preferred of br and gzip; identity when it accepts neither. */
export function negotiateCoding (header: string | undefined): Coding {
  if (header === undefined) return 'identity'
  const br = qualityOf(header, 'br')
  const gzip = qualityOf(header, 'gzip')
  if (br > 0 && br >= gzip) return 'br'
  if (gzip > 0) return 'gzip'
  return 'identity'
}

/**
 * A GET route for a document that is the same bytes for the life of the process (the OpenAPI
 * document): computed and compressed once, on first use, as gzip and brotli; each coding a
 * representation of its own with its own strong ETag; `Vary: Accept-Encoding`; revalidated
 * (`public, no-cache`); its preconditions evaluated as the API's reads do (RFC 9110 §13.2.2):
 * `If-Match` naming no current tag → 412, then `If-None-Match` naming it → 304.
 * Hand-written rather than @fastify/compress: that plugin compresses every response again on every
 * request and gives no coding-specific ETag; here the work is done once.
 */
export function documentRoute (app: FastifyInstance, url: string, contentType: string, render: () => Promise<string>): void {
  let representations: Promise<Record<Coding, Representation>> | undefined
  const build = async (): Promise<Record<Coding, Representation>> => {
    const identity = Buffer.from(await render())
    const of = (body: Buffer): Representation => ({ body, etag: `"${hash('sha1', body, 'base64url')}"` })
    return {
      identity: of(identity),
      gzip: of(gzipSync(identity, { level: 9 })),
      br: of(brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } }))
    }
  }
  app.get(url, { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    representations ??= build().catch((err: unknown) => {
      representations = undefined // the next request tries again
      throw err
    })
    const coding = negotiateCoding(request.headers['accept-encoding'])
    const { body, etag } = (await representations)[coding]
    const im = request.headers['if-match']
    if (im !== undefined && !ifMatchHolds(im, etag)) throw new ApiError('precondition_failed', 'If-Match names no current entity tag of this document')
    reply.header('vary', 'Accept-Encoding').header('etag', etag).header('cache-control', 'public, no-cache')
    const inm = request.headers['if-none-match']
    if (inm !== undefined && ifNoneMatchHits(inm, etag)) return reply.code(304).send(headNoBody(request))
    if (coding !== 'identity') reply.header('content-encoding', coding)
    return reply.type(contentType).send(body)
  })
}

/**
 * @fastify/swagger-ui redirects /docs/static/index.html to the page by rewriting the URL's end, so
 * with a query string (`index.html?x=1`) the rewrite misses and the redirect points at itself.
 * This onRequest hook (for the docs routes' scope) redirects it to the page, query kept.
 */
export function redirectDocsIndex (prefix: string) {
  const index = `${prefix}/static/index.html`
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const q = request.url.indexOf('?')
    if (q === -1 || request.url.slice(0, q) !== index) return
    await reply.redirect(`${prefix}/${request.url.slice(q)}`)
  }
}
