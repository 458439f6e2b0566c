import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config/index.js'
import { CODE_SAMPLES } from '../docs/code-samples.js'
import { docsPageOptions } from '../docs/page.js'
import { SHARED_SCHEMAS } from '../schemas/index.js'
import { SCOPES } from '../schemas/scopes.js'
import { unroutedRequests } from '../schemas/unrouted.js'
import { answerRead, represent, type Representation } from '../http/representations.js'
import { JSON_TYPE } from '../http/media-types.js'
import { ApiError } from '../errors.js'

type Json = Record<string, unknown>

// Short: the docs page shows it above every operation; the rest is in the responses and http-api.md.
const INFO_DESCRIPTION = [
  'The Petstore v1 JSON-over-HTTP interface: a store of animals.',
  '',
  'Operations under `/v1` need `Authorization: Bearer <API_KEY>` (make a key with `bin/petstore keys create --name NAME`): ' +
    'without a valid key the answer is 401, and with a key that lacks the operation\'s scope 403. ' +
    'Every error is an `Error` object: branch on its `code`. `id` and `categoryId` are int64: parse them without rounding ' +
    '(the typed client in packages/client gives them as BigInt).',
  '',
  '**Every answer carries** `X-Request-Id` (yours, or a UUID: quote it in a report); `/v1` answers carry `RateLimit` and `RateLimit-Policy` while rate limits are on. ' +
    'The answers operations share (401, 403, 408, 413, 414, 415, 417, 429, 431, 500, 501, 503, 505, as they apply) are described once each ' +
    '(`components/responses`) and listed a line each after an operation\'s own; 429 and 503 also carry `Retry-After`.'
].join('\n')

/** Every operation of the document, each path's methods in order. */
function operations (document: Json): Json[] {
  return Object.values(document.paths as Record<string, Json>).flatMap(item => Object.values(item) as Json[])
}

/**
 * The operations' response headers. swagger copies a header's schema as it is: our `x-required`
 * marker and the example move to the header object. Then each header is written once in
 * components/headers; a name with two different definitions (Link) stays inline.
 */
function shareHeaders (document: Json): Json {
  const maps = operations(document)
    .flatMap(op => Object.values((op.responses ?? {}) as Record<string, Json>))
    .map(response => (response.headers ?? {}) as Record<string, Json>)
  const uses = maps.flatMap(headers => Object.entries(headers))
  for (const [, h] of uses) {
    const { 'x-required': required, example, ...schema } = h.schema as Json
    h.schema = schema
    if (required === true) h.required = true
    if (example !== undefined) h.example = example
  }
  const shared: Record<string, Json> = {}
  for (const [name, same] of Map.groupBy(uses, ([name]) => name)) {
    const text = JSON.stringify(same[0]![1])
    if (same.every(([, h]) => JSON.stringify(h) === text)) shared[name] = same[0]![1]
  }
  for (const headers of maps) {
    for (const name of Object.keys(headers)) {
      if (shared[name] !== undefined) headers[name] = { $ref: `#/components/headers/${name}` }
    }
  }
  document.components = { ...(document.components as Json), headers: shared }
  return document
}

/** Statuses any operation can answer: one shared component each, so an operation's own answers stand out. */
const SHARED_STATUSES: ReadonlySet<string> = new Set(['401', '403', '408', '413', '414', '415', '417', '429', '431', '500', '501', '503', '505'])

/** "Request headers too large: an `Error`…" → "RequestHeadersTooLarge". */
function responseName (description: string): string {
  return description.split(':', 1)[0]!.split(/[^A-Za-z0-9]+/).filter(w => w !== '').map(w => w[0]!.toUpperCase() + w.slice(1)).join('')
}

/**
 * A shared status answered differently by some operations (getPet's deprecation headers) has one
 * component per variant: the most used keeps the plain name, others take their first operation's.
 */
function shareResponses (document: Json): Json {
  // Each answer of a shared status, with the operation that gives it.
  const uses = operations(document).flatMap(op => Object.entries((op.responses ?? {}) as Record<string, Json>)
    .filter(([status, response]) => SHARED_STATUSES.has(status) && response.$ref === undefined)
    .map(([status, response]) => ({ status, response, opId: String(op.operationId), responses: op.responses as Json })))
  const byStatus = Map.groupBy(uses, use => use.status)
  const headerCount = (r: Json): number => Object.keys((r.headers ?? {}) as Json).length
  const shared: Record<string, Json> = {}
  for (const status of [...byStatus.keys()].sort()) {
    // The variants, by the response's text; among those used equally often, the one with more headers
    // (a /v1 operation's) keeps the plain name.
    const ranked = [...Map.groupBy(byStatus.get(status)!, use => JSON.stringify(use.response)).values()]
      .sort((a, b) => b.length - a.length || headerCount(b[0]!.response) - headerCount(a[0]!.response))
    for (const [i, users] of ranked.entries()) {
      const { response, opId } = users[0]!
      const base = responseName(String(response.description))
      const name = i === 0 ? base : `${base}_${opId}`
      shared[name] = response
      for (const user of users) user.responses[status] = { $ref: `#/components/responses/${name}` }
    }
  }
  document.components = { ...(document.components as Json), responses: shared }
  return document
}

function addCodeSamples (document: Json): Json {
  for (const op of operations(document)) {
    const samples = CODE_SAMPLES[String(op.operationId)]
    if (samples !== undefined) op['x-codeSamples'] = samples
  }
  return document
}

function swaggerOptions (config: Readonly<Config>): FastifyDynamicSwaggerOptions {
  // This server first, by a relative URL, so "Try it out" works behind any proxy; then the configured ones.
  const list = [{ url: '/v1', description: 'This server (where this document was fetched from)' }]
  if (config.publicBaseUrl !== undefined) list.push({ url: config.publicBaseUrl, description: 'Production' })
  if (config.stagingBaseUrl !== undefined && config.stagingBaseUrl !== config.publicBaseUrl) list.push({ url: config.stagingBaseUrl, description: 'Staging' })
  // Routes outside /v1 (health) are served from the origin of each base address.
  const rootServers = list.map(s => ({ url: s.url.replace(/\/v1$/, '') || '/', description: s.description }))
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Petstore',
        version: '1.1.0',
        description: INFO_DESCRIPTION,
        contact: { name: 'Petstore maintainers' },
        license: { name: 'MIT', identifier: 'MIT' }
      },
      servers: list,
      tags: [
        { name: 'pets', description: 'The animals: list, add, get (deprecated).' },
        { name: 'store', description: 'Store orders: named by the interface, not specified, answered 501.' },
        { name: 'health', description: 'Liveness and readiness, outside /v1, without authentication.' },
        { name: 'index', description: 'GET /: where to start, outside /v1, without authentication.' }
      ],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key from `bin/petstore keys create --name NAME`, sent as `Authorization: Bearer <API_KEY>`. Keys are `psk_` and 43 base64url characters.\n\n' +
              'A key holds scopes (`--scope`; every scope when not given), and each operation names the one it needs in its security requirement; ' +
              'a valid key without it is answered 403 `insufficient_scope` with `WWW-Authenticate: Bearer realm="petstore", error="insufficient_scope", scope="…"` (RFC 6750 §3.1), ' +
              'before the request body is read. The scopes:\n\n' +
              Object.entries(SCOPES).map(([scope, what]) => `- \`${scope}\`: ${what}`).join('\n') + '\n\n' +
              'A key may expire (`--expires`): from then on it is answered 401 `key_expired` with `error="invalid_token", error_description="the API key has expired"`. ' +
              'A revoked key (`keys revoke`, now or `--after` a delay) is answered 401 `unauthorized` from its revocation time.'
          }
        }
      },
      security: [{ bearerAuth: [] }],
      // @fastify/swagger writes `x-` keys of these options at the document's root, after the others
      // (its types name no extensions).
      ...{ 'x-unrouted-requests': unroutedRequests() }
    },
    // Shared schemas (Error) keep their $id as their component name.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}`
    },
    transform: ({ schema, url }) => {
      if (url.startsWith('/v1/') || schema === undefined) return { schema, url }
      return { schema: { ...schema, servers: rootServers } as typeof schema, url }
    },
    transformObject: (documentObject) => addCodeSamples(shareResponses(shareHeaders((documentObject as { openapiObject: Json }).openapiObject))) as never
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The docs app (buildDocsApp): the document (`swagger()`) and the /docs page's routes. */
    docsApp: () => Promise<FastifyInstance>
  }
}

/**
 * The OpenAPI document, generated by @fastify/swagger from the routes' own schemas (so it cannot
 * describe a different service), and the /docs page. Register before any route. Neither is needed for
 * the first request and both are costly to load, so at start this only records what @fastify/swagger's
 * hooks would; the first request for either builds a small app from the same route objects.
 */
async function openApi (app: FastifyInstance, opts: { config: Readonly<Config> }): Promise<void> {
  const routes: RouteOptions[] = []
  app.addHook('onRoute', (route) => { routes.push(route) })
  let built: Promise<FastifyInstance> | undefined
  app.decorate('docsApp', async () => {
    built ??= buildDocsApp(opts.config, routes).catch((err: unknown) => {
      built = undefined
      throw err
    })
    return await built
  })
}

export const openApiPlugin = fp(openApi, { name: 'petstore-openapi' })

async function buildDocsApp (config: Readonly<Config>, routes: readonly RouteOptions[]): Promise<FastifyInstance> {
  const [{ default: swagger }, { default: swaggerUi }] = await Promise.all([import('@fastify/swagger'), import('@fastify/swagger-ui')])
  const docs = Fastify({ logger: false, exposeHeadRoutes: false })
  docs.setValidatorCompiler(() => () => true)
  docs.setSerializerCompiler(() => (data) => JSON.stringify(data))
  await docs.register(swagger, swaggerOptions(config))
  // The named schemas the routes refer to: the same list registerSchemas adds to the service.
  for (const schema of SHARED_SCHEMAS) docs.addSchema(schema)
  for (const route of routes) {
    // Hidden routes are left out of the document anyway; among them are this app's own (/docs…).
    if (route.schema?.hide === true) continue
    docs.route({ method: route.method, url: route.url, schema: route.schema, config: route.config, handler: async () => {} })
  }
  await docs.register(swaggerUi, docsPageOptions(config))
  await docs.ready()
  return docs
}

// The docs page's routes (@fastify/swagger-ui, under /docs), answered by the docs app.
const DOCS_PAGE_ROUTES = ['/docs', '/docs/', '/docs/json', '/docs/yaml', '/docs/static/*']
// Hop-by-hop, or this server's own (Date).
const NOT_FORWARDED = new Set(['transfer-encoding', 'connection', 'keep-alive', 'date'])

/** The Error for a static file's refusal by @fastify/static: a precondition or a range it cannot meet. */
function staticFileError (status: number, contentRange: unknown): Error {
  if (status === 412) return new ApiError('precondition_failed', 'If-Match or If-Unmodified-Since does not hold for the current file')
  if (status === 416) {
    return new ApiError('range_not_satisfiable', 'the Range header names no byte range within the file', typeof contentRange === 'string' ? { 'content-range': contentRange } : undefined)
  }
  // Any other 4xx: the error handler maps it by its status.
  return Object.assign(new Error('the request for the docs page file was refused'), { statusCode: status })
}

/** GET /openapi.json, /openapi.yaml and the /docs page: public, and served from installed files only. */
export async function docsRoutes (app: FastifyInstance): Promise<void> {
  for (const format of ['json', 'yaml'] as const) {
    // The same bytes for the life of the process: rendered on first use, then answered as the API's
    // reads are (representations.ts), each coding made once at the best settings and kept.
    const text = (docs: FastifyInstance): string => format === 'json' ? JSON.stringify(docs.swagger(), null, 2) : docs.swagger({ yaml: true })
    let document: Representation | undefined
    const answer = { cacheControl: 'public, no-cache', contentType: format === 'json' ? JSON_TYPE : 'application/yaml; charset=utf-8', best: true }
    app.get(`/openapi.${format}`, { schema: { hide: true } }, async (request, reply) => {
      const docs = await app.docsApp()
      document ??= represent(Buffer.from(text(docs)))
      return answerRead(request, reply, document, answer)
    })
  }
  for (const url of DOCS_PAGE_ROUTES) {
    app.get(url, { schema: { hide: true } }, async (request, reply) => {
      // @fastify/swagger-ui's redirect of static/index.html points at itself when a query follows: this one goes to the page.
      const q = request.url.indexOf('?')
      if (q !== -1 && request.url.slice(0, q) === '/docs/static/index.html') return reply.redirect(`/docs/${request.url.slice(q)}`)
      const docs = await app.docsApp()
      // Always GET: for HEAD, Fastify sends the headers of the GET answer without its body.
      // As a stream: the page's large scripts are piped from the file, not buffered per request.
      const res = await docs.inject({ method: 'GET', url: request.url, headers: request.headers, payloadAsStream: true })
      const body = res.stream()
      // Every refusal is answered here, its body unread.
      if (res.statusCode >= 400) body.destroy()
      // A missing file: the service's own 404 (or 405), as for any other path.
      if (res.statusCode === 404) return reply.callNotFound()
      if (res.statusCode >= 500) throw new Error(`the docs page failed: ${res.statusCode}`)
      // @fastify/static's refusals (412, 416) come in Fastify's default error shape: answered as the API's Error.
      if (res.statusCode >= 400) throw staticFileError(res.statusCode, res.headers['content-range'])
      for (const [name, value] of Object.entries(res.headers)) {
        if (value !== undefined && !NOT_FORWARDED.has(name)) reply.header(name, value)
      }
      // The body as a stream, HEAD too, so Content-Length stays as the docs app gave it: a file's length
      // (not measured again), none on a 304 (RFC 9110 §8.6), 0 on a redirect (which gets no made-up Content-Type).
      return reply.code(res.statusCode).send(body)
    })
  }
}
