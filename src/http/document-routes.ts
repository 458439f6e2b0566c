import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import { chooseCoding, codedOf, type Codable } from './content-coding.js'
import { etagOf, headNoBody, ifMatchHolds, ifNoneMatchHits, varyOnCoding } from './etag.js'

// A document that is the same bytes for the life of the process: rendered on first use, then negotiated
// and revalidated as the API's reads (etag.ts), each coding made once at the best settings and kept.
export function documentRoute (app: FastifyInstance, url: string, contentType: string, render: () => Promise<string>): void {
  let document: Promise<Codable & { body: Buffer }> | undefined
  const build = async (): Promise<Codable & { body: Buffer }> => {
    const body = Buffer.from(await render())
    return { body, etag: etagOf(body), gzip: undefined, br: undefined }
  }
  app.get(url, { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    document ??= build().catch((err: unknown) => {
      document = undefined // the next request tries again
      throw err
    })
    const identity = await document
    const coding = chooseCoding(request.headers['accept-encoding'], identity.body.length)
    const { body, etag } = coding === 'identity' ? identity : codedOf(identity, coding, true)
    const im = request.headers['if-match']
    if (im !== undefined && !ifMatchHolds(im, identity.etag)) throw new ApiError('precondition_failed', 'If-Match names no current entity tag of this document')
    varyOnCoding(reply)
    reply.header('etag', etag).header('cache-control', 'public, no-cache')
    const inm = request.headers['if-none-match']
    if (inm !== undefined && ifNoneMatchHits(inm, etag)) return reply.code(304).send(headNoBody(request))
    if (coding !== 'identity') reply.header('content-encoding', coding)
    return reply.type(contentType).send(body)
  })
}

// @fastify/swagger-ui's redirect of static/index.html points at itself when a query follows: this sends it to the page.
export function redirectDocsIndex (prefix: string) {
  const index = `${prefix}/static/index.html`
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const q = request.url.indexOf('?')
    if (q === -1 || request.url.slice(0, q) !== index) return
    await reply.redirect(`${prefix}/${request.url.slice(q)}`)
  }
}
