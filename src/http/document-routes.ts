import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { answerRead, represent, type Representation } from './representations.js'

// A document that is the same bytes for the life of the process: rendered on first use, then answered
// as the API's reads are (representations.ts), each coding made once at the best settings and kept.
export function documentRoute (app: FastifyInstance, url: string, contentType: string, render: () => Promise<string>): void {
  let document: Promise<Representation> | undefined
  const answer = { cacheControl: 'public, no-cache', contentType, best: true }
  app.get(url, { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    document ??= render().then(text => represent(Buffer.from(text))).catch((err: unknown) => {
      document = undefined // the next request tries again
      throw err
    })
    return answerRead(request, reply, await document, answer)
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
