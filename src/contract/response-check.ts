import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

/*
 * Checks one response against an OpenAPI document: status documented for the operation, content
 * type, every documented header (present when required, matching its schema), optionally no
 * undocumented API header, and the body against its schema (Ajv, the document's own schemas). Errors
 * must also agree with the catalogue (`x-error-codes`) when the document has one. The tests run it
 * on every answer they see (test/helpers/conformance.ts); `petstore conformance` runs it against a
 * live deployment.
 */

type Json = Record<string, any>

export interface SeenResponse {
  method: string
  /** Path and query as sent, e.g. /v1/pets?limit=2 */
  url: string
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

/**
 * Headers of HTTP itself, and browser-hardening and CORS headers: not part of an operation's
 * contract. Any other header a response carries must be documented for that response.
 */
const TRANSPORT_HEADERS = new Set([
  'content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'vary', 'cache-control',
  'x-content-type-options', 'strict-transport-security', 'content-security-policy', 'x-frame-options',
  'referrer-policy', 'cross-origin-resource-policy', 'cross-origin-opener-policy', 'cross-origin-embedder-policy'
])
const isTransportHeader = (name: string): boolean => TRANSPORT_HEADERS.has(name) || name.startsWith('access-control-')

/** A documented operation: `path` is its template under its server's base path (/v1/pets/{petId}). */
export interface Operation { method: string, template: string, path: string, op: Json, pattern: RegExp }

/** The response being checked: its headers by lower-case name, its media type, and how it fails (ConformanceError). */
interface Seen { res: SeenResponse, headers: Map<string, string>, contentType: string | undefined, fail: (drift: string) => never }

export interface CheckerOptions {
  /** Names the document in failure messages, e.g. openapi/openapi.json. */
  source: string
  /**
   * Refuse a header the document does not list for the response (the tests: the service sends
   * nothing undocumented). Off for a deployment, where a proxy may add headers clients ignore.
   */
  refuseUndocumentedHeaders: boolean
}

export class ResponseChecker {
  private readonly ajv = addFormats.default(new Ajv2020({ strict: false, allErrors: true, validateFormats: true }))
  readonly operations: Operation[] = []
  private readonly errorCodes: Record<string, { status: number }> | undefined

  constructor (readonly document: Json, private readonly options: CheckerOptions) {
    // A schema at a pointer into the document is compiled by getSchema on first use and kept.
    this.ajv.addSchema(document, 'openapi.json')
    this.errorCodes = document.components?.schemas?.Error?.['x-error-codes']
    for (const [template, item] of Object.entries(document.paths as Record<string, Json>)) {
      for (const [method, op] of Object.entries(item)) {
        if (!['get', 'put', 'post', 'delete', 'patch', 'options', 'head'].includes(method)) continue
        // An operation's servers, else its path's, else the document's: where its path starts.
        const servers = [op.servers, item.servers, document.servers].find(s => Array.isArray(s) && s.length > 0) as Array<{ url: string }> | undefined
        const path = new URL(servers?.[0]?.url ?? '/', 'http://server.invalid').pathname.replace(/\/$/, '') + template
        const regex = path.replace(/[.?*+^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]*')
        this.operations.push({ method: method.toUpperCase(), template, path, op, pattern: new RegExp(`^${regex}$`) })
      }
    }
  }

  /** Throws ConformanceError naming the request and the drift. */
  check (res: SeenResponse): void {
    // The path the router saw: inject() and fetch resolve dot segments like any URL parser. A path
    // starting with // is a path, not a network-path reference (light-my-request reads it so too).
    const url = res.url.startsWith('//') ? `http://x${res.url}` : res.url
    const path = URL.parse(url, 'http://x')?.pathname ?? url.split('?', 1)[0]!
    const where = `${res.method} ${res.url} → ${res.status}`
    const method = res.method === 'HEAD' ? 'GET' : res.method
    // A path that does not percent-decode is routed again with each % escaped (routeBadUrls in
    // src/plugins/errors.ts): it gets the answer, and the headers, of the operation it then addresses.
    const routed = attempt(() => decodeURIComponent(path)) !== undefined ? path : path.replaceAll('%', '%25')
    const found = this.operations.find(o => o.method === method && o.pattern.test(routed))
    const headers = new Map(Object.entries(res.headers).filter(([, v]) => v !== undefined).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : String(v)]))
    const seen: Seen = {
      res,
      headers,
      contentType: headers.get('content-type')?.split(';', 1)[0]?.trim(),
      fail: (drift) => { throw new ConformanceError(where, drift, this.options.source) }
    }

    if (found === undefined) {
      // No documented operation (docs routes, unknown paths, other methods): the document's root
      // extension x-unrouted-requests says what such a request can get.
      this.checkUnrouted(seen, path)
      return
    }
    const responses = found.op.responses as Json
    const key = String(res.status) in responses ? String(res.status) : 'default' in responses ? 'default' : undefined
    if (key === undefined) seen.fail(`status ${res.status} is not documented for ${found.op.operationId} (documented: ${Object.keys(responses).join(', ')})`)
    // A response is inline or a $ref to components/responses (the ones every operation shares).
    const given = responses[key] as Json
    const pointer = typeof given.$ref === 'string' ? given.$ref.slice(1) : `/paths/${escapePointer(found.template)}/${method.toLowerCase()}/responses/${key}`
    const response = resolveRef(this.document, given)

    this.checkHeaders(seen, response, pointer)
    this.checkContent(seen, response, type => `${pointer}/content/${escapePointer(type)}/schema`)
  }

  /**
   * The body: none where the response documents none, else of a documented content type; an error
   * against the Error schema and the catalogue; a success against the schema `schemaOf` names (none:
   * not validated).
   */
  private checkContent (seen: Seen, response: Json, schemaOf?: (type: string) => string): void {
    const { res, contentType } = seen
    const content = response.content as Json | undefined
    if (content === undefined) {
      if (res.body !== '' && res.method !== 'HEAD') seen.fail('a body was sent where none is documented')
      return
    }
    if (contentType === undefined || !(contentType in content)) seen.fail(`content type ${String(contentType)} is not documented (documented: ${Object.keys(content).join(', ')})`)
    if (res.method === 'HEAD') return
    if (res.status >= 400) {
      this.checkError(seen, schemaOf?.(contentType) ?? '/components/schemas/Error')
      return
    }
    if (schemaOf === undefined) return
    const v = this.ajv.getSchema(`openapi.json#${schemaOf(contentType)}`)!
    // A JSON media type is checked as the value it encodes; any other (GET /'s HTML) as its text.
    const body = /[/+]json$/.test(contentType) ? parse(res.body, seen) : res.body
    if (!v(body)) seen.fail(`body ${this.ajv.errorsText(v.errors)}: ${res.body.slice(0, 300)}`)
  }

  /** Every documented header present matches its schema, required ones are there, no other API header is sent. */
  private checkHeaders (seen: Seen, response: Json, pointer: string): void {
    const { headers } = seen
    const documented = new Map(Object.entries((response.headers ?? {}) as Record<string, Json>).map(([k, v]) => [k.toLowerCase(), { name: k, header: v }]))
    for (const [name, { name: docName, header }] of documented) {
      // A header is inline or a $ref to components/headers.
      const ref = typeof header.$ref === 'string' ? header.$ref.slice(1) : `${pointer}/headers/${escapePointer(docName)}`
      const value = headers.get(name)
      if (value === undefined) {
        if (resolveRef(this.document, header).required === true) seen.fail(`required header ${docName} is missing`)
        continue
      }
      const v = this.ajv.getSchema(`openapi.json#${ref}/schema`)!
      if (!v(value)) seen.fail(`header ${docName}: ${JSON.stringify(value)} ${this.ajv.errorsText(v.errors)}`)
    }
    if (!this.options.refuseUndocumentedHeaders) return
    for (const name of headers.keys()) {
      if (!documented.has(name) && !isTransportHeader(name)) seen.fail(`header ${name} is not documented for this response`)
    }
  }

  private checkUnrouted (seen: Seen, path: string): void {
    const { res } = seen
    const unrouted = this.document['x-unrouted-requests'] as Json | undefined
    if (unrouted === undefined) seen.fail('the document has no x-unrouted-requests')
    const docs = unrouted.documentation as Json
    const docPath = (template: string): RegExp => new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '.+')}$`)
    const isDocs = (res.method === 'GET' || res.method === 'HEAD') && (docs.paths as string[]).some(p => docPath(p).test(path))
    const status = String(res.status)
    const docsResponses = docs.responses as Json
    const [response, pointer] = isDocs && status in docsResponses
      ? [docsResponses[status] as Json, `/x-unrouted-requests/documentation/responses/${status}`]
      : [(unrouted.responses as Json)[status] as Json | undefined, `/x-unrouted-requests/responses/${status}`]
    if (response === undefined) seen.fail(`status ${status} is not documented for a request no operation matches${isDocs ? ' (documentation route)' : ''}`)
    this.checkHeaders(seen, response, pointer)
    if (res.method !== 'HEAD') this.checkContent(seen, response)
  }

  private checkError (seen: Seen, schemaPointer: string): void {
    const { res, headers, contentType } = seen
    if (contentType !== 'application/json') seen.fail(`an error must be application/json, got ${String(contentType)}`)
    if (!headers.has('x-request-id')) seen.fail('X-Request-Id is missing')
    const body = parse(res.body, seen) as Json
    const v = this.ajv.getSchema(`openapi.json#${schemaPointer}`)!
    if (!v(body)) seen.fail(`error body ${this.ajv.errorsText(v.errors)}: ${res.body.slice(0, 300)}`)
    if (body.status !== res.status) seen.fail(`error body status ${String(body.status)} differs from the HTTP status`)
    if (this.errorCodes === undefined) return
    // The document lets a later version add codes; a service must send only the ones its document lists.
    const entry = Object.hasOwn(this.errorCodes, body.code) ? this.errorCodes[body.code] : undefined
    if (entry === undefined) seen.fail(`error code ${String(body.code)} is not in the catalogue (x-error-codes)`)
    if (entry?.status !== res.status) seen.fail(`error code ${String(body.code)} belongs to status ${String(entry?.status)} in the catalogue`)
  }
}

/** A JSON pointer's reference token for a key (RFC 6901): ~ as ~0, / as ~1. */
export const escapePointer = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1')

/** A node, or what its local $ref (#/…) points at, followed to the end. */
export function resolveRef (document: Json, node: Json): Json {
  if (typeof node?.$ref !== 'string' || !node.$ref.startsWith('#/')) return node
  const target = (node.$ref as string).slice(2).split('/').reduce<Json>((n, part) => n?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], document)
  return resolveRef(document, target)
}

/** What `f` returns; undefined when it throws (a JSON text that does not parse, a path that does not percent-decode). */
export function attempt<T> (f: () => T): T | undefined {
  try {
    return f()
  } catch {
    return undefined
  }
}

function parse (body: string, seen: Seen): unknown {
  const value = attempt((): unknown => JSON.parse(body))
  return value === undefined ? seen.fail(`body is not JSON: ${body.slice(0, 200)}`) : value
}

/** A response that differs from its document: `where` is the request and status, `drift` what differs. */
export class ConformanceError extends Error {
  override name = 'ConformanceError'
  constructor (readonly where: string, readonly drift: string, source: string) {
    super(`response does not conform to ${source}: ${where}: ${drift}`)
  }
}
