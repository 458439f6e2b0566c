import type { TSchema } from 'typebox'
import { ERROR_CODES, type ErrorCode } from '../errors.js'
import { ErrorSchema, Ref } from './common.js'

/*
 * Response definitions in the shape both Fastify and @fastify/swagger read: Fastify serializes the
 * body with `content[mediaType].schema`; swagger copies `description`, `headers` and `content` into
 * the OpenAPI document. So a route's `response` map is the one description of what it answers.
 */

/**
 * A response header, as a JSON Schema plus its description. `x-required` marks a header that every
 * such response carries; the OpenAPI plugin turns it into the header object's `required: true`.
 */
export interface HeaderSchema {
  type: 'string'
  description: string
  pattern?: string
  example?: string
  'x-required'?: boolean
}

export const header = (description: string, extra: Omit<HeaderSchema, 'type' | 'description'> = {}): HeaderSchema =>
  ({ type: 'string', description, ...extra })

/** Every header the service sets on purpose (header names are case-insensitive; the document uses the usual spelling). */
export const Headers = {
  requestId: header('Id of this request, as logged: the client\'s own `X-Request-Id` (1–128 of `A-Za-z0-9._:-`), else a UUID.', { pattern: '^[A-Za-z0-9._:-]{1,128}$', 'x-required': true }),
  location: header('Path of the created animal.', { pattern: '^/v1/pets/-?[0-9]+$', example: '/v1/pets/1', 'x-required': true }),
  linkNext: header('Present when more animals follow: the URL of the next page (RFC 8288), with limit, status and an opaque cursor.', { pattern: '^</v1/pets\\?[^>]*cursor=[^>]+>; rel="next"$', example: '</v1/pets?limit=20&cursor=eyJ…>; rel="next"' }),
  linkSuccessor: header('The replacement of this deprecated operation (RFC 8288 successor-version).', { pattern: '^</v1/pets>; rel="successor-version"$', example: '</v1/pets>; rel="successor-version"', 'x-required': true }),
  deprecation: header('When this operation was deprecated: `@` and Unix seconds (RFC 9745).', { pattern: '^@-?[0-9]+$', example: '@1767225600', 'x-required': true }),
  sunset: header('When this operation is removed, as an HTTP date (RFC 8594); from then on it answers 410.', { example: 'Thu, 05 Dec 2030 00:00:00 GMT', 'x-required': true }),
  wwwAuthenticate: header('The bearer challenge (RFC 6750): `Bearer realm="petstore"`, plus `error="invalid_token"` and an `error_description` when a key was sent but refused (401), or `error="insufficient_scope"` and the `scope` the operation needs when the key lacks it (403).', { pattern: '^Bearer realm="petstore"', example: 'Bearer realm="petstore", error="invalid_token"', 'x-required': true }),
  retryAfter: header('Seconds to wait before retrying.', { pattern: '^[0-9]+$', example: '1', 'x-required': true }),
  etag: header('Strong entity tag of this representation, one per content coding (the identity tag with `-gzip` or `-br` inside the quotes for a compressed body); send it back in `If-None-Match` to get 304 when nothing changed.', { pattern: '^"[A-Za-z0-9_-]+"$', 'x-required': true }),
  etagNotModified: header('The entity tag the client already holds (that of the content coding this request chose).', { pattern: '^"[A-Za-z0-9_-]+"$', 'x-required': true }),
  contentEncoding: header('`gzip` or `br`: the body is compressed as `Accept-Encoding` asked (bodies of 1024 bytes or more). Absent otherwise.', { pattern: '^(gzip|br)$', example: 'gzip' }),
  vary: header('What the answer depends on: `Accept-Encoding` (and `Origin` with CORS); `Accept` on GET /.', { pattern: '(^|, )(Accept-Encoding|Accept)$', example: 'Accept-Encoding', 'x-required': true }),
  cacheControl: header('Caches must revalidate (the answer depends on the API key); other answers say `no-store`.', { example: 'private, no-cache' }),
  idempotentReplayed: header('`true` when this 201 replays the answer to an earlier request with the same `Idempotency-Key`.', { pattern: '^true$' }),
  rateLimit: header('Quota left in this window: `"key"` per API key, `"address"` per client address (IETF RateLimit draft).', { example: '"key";r=5999;t=60' }),
  rateLimitPolicy: header('The quota policy that applies (IETF RateLimit draft).', { example: '"key";q=6000;w=60' })
} as const

/** Present on /v1 answers while rate limits are on (RATE_LIMIT_MAX, RATE_LIMIT_ANON_MAX). */
export const RateLimitHeaders = { RateLimit: Headers.rateLimit, 'RateLimit-Policy': Headers.rateLimitPolicy }

/** 304 for a conditional read whose If-None-Match names the current ETag: no body. */
export function notModified (headers: Record<string, HeaderSchema> = {}): object {
  return {
    description: 'Not modified: `If-None-Match` names the current ETag; no body.',
    headers: { 'X-Request-Id': Headers.requestId, ETag: Headers.etagNotModified, ...headers },
    type: 'null'
  }
}

type HeaderMap = Record<string, HeaderSchema>

/** A successful JSON response. */
export function jsonResponse (description: string, schema: TSchema, headers: HeaderMap = {}): object {
  return {
    description,
    headers: { 'X-Request-Id': Headers.requestId, ...headers },
    content: { 'application/json': { schema } }
  }
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  408: 'Request timeout',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition failed',
  413: 'Payload too large',
  414: 'URI too long',
  415: 'Unsupported media type',
  417: 'Expectation failed',
  422: 'Unprocessable content',
  429: 'Too many requests',
  431: 'Request headers too large',
  500: 'Internal error',
  501: 'Not implemented',
  503: 'Service unavailable'
}

/** Headers an error of this status always carries, wherever it comes from. */
function headersFor (status: number): HeaderMap {
  if (status === 401 || status === 403) return { 'WWW-Authenticate': Headers.wwwAuthenticate }
  if (status === 503 || status === 429) return { 'Retry-After': Headers.retryAfter }
  return {}
}

/**
 * Answers any request can get, whatever operation it addresses, because they are decided at the
 * edge: by Node's HTTP parser (malformed or oversized request, too slow), by the checks before
 * routing (hardening.ts: target length and fragment, Host, repeated singleton headers, transfer
 * codings), by `Expect`, or by shutdown and overload shedding.
 */
export const EDGE_CODES = ['bad_request', 'request_timeout', 'uri_too_long', 'expectation_failed', 'header_too_large', 'not_implemented', 'service_unavailable'] as const satisfies readonly ErrorCode[]

/**
 * Codes Node's HTTP parser can answer (client-errors.ts), before the request reaches a route: such
 * an answer carries only what every response carries (X-Request-Id, nosniff, Cache-Control), none
 * of an operation's own headers.
 */
const PARSER_CODES: ReadonlySet<ErrorCode> = new Set(['bad_request', 'request_timeout', 'uri_too_long', 'header_too_large'])

/** Codes only the parser answers: a status given only by these carries none of an operation's own headers. */
const PARSER_ONLY: ReadonlySet<ErrorCode> = new Set(['request_timeout', 'header_too_large'])

/**
 * Edge codes answered before the rate limits are counted (by the parser, or by the edge checks on
 * arrival): a status given only by these never carries RateLimit headers.
 */
const BEFORE_LIMITS: ReadonlySet<ErrorCode> = new Set([...PARSER_CODES, 'not_implemented'])

/** The headers of a status only the edge answers, before the rate limits: all but RateLimit's. */
function beforeLimits (headers: HeaderMap): HeaderMap {
  const { RateLimit: _limit, 'RateLimit-Policy': _policy, ...rest } = headers
  return rest
}

/** An operation's headers on a status the parser can also answer: listed, not promised (present on the operation's own answers only). */
function notOnParserAnswers (headers: HeaderMap): HeaderMap {
  const out: HeaderMap = {}
  for (const [name, h] of Object.entries(headers)) {
    const { 'x-required': _required, ...rest } = h
    out[name] = rest
  }
  return out
}

/**
 * What the authentication policy (plugins/auth.ts) can answer to any /v1 request before it reaches
 * an operation: no key, a refused or expired one (401), or over a limit (429).
 */
export const AUTHENTICATION_CODES = ['unauthorized', 'key_expired', 'rate_limited'] as const satisfies readonly ErrorCode[]
/** ...and to a request for an operation, which needs a scope (its `config.scope`): 403 when the key lacks it. */
export const AUTHORIZATION_CODES = [...AUTHENTICATION_CODES, 'insufficient_scope'] as const satisfies readonly ErrorCode[]

/**
 * The error responses of an operation, from the catalogue codes it can answer (the edge codes
 * above are always added): one response per status, each an Error object, its description naming
 * the codes.
 */
export function errorResponses (codes: readonly ErrorCode[], extraHeaders: HeaderMap = {}): Record<number, object> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of [...new Set([...codes, ...EDGE_CODES])]) {
    const status = ERROR_CODES[code].status
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  const out: Record<number, object> = {}
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const edgeOnly = list.every(c => BEFORE_LIMITS.has(c) && !codes.includes(c))
    const extra = list.every(c => PARSER_ONLY.has(c)) ? {} : edgeOnly ? beforeLimits(extraHeaders) : extraHeaders
    // The codes only: what each means is the Error schema's x-error-codes (docs/reference/errors.md),
    // so an expanded operation on the docs page stays a few screens long.
    const named = list.map(c => `\`${c}\``).join(', ')
    out[status] = {
      description: `${STATUS_TEXT[status] ?? 'Error'}: an \`Error\` whose \`code\` ${list.length === 1 ? 'is' : 'is one of'} ${named}.`,
      headers: { 'X-Request-Id': Headers.requestId, ...headersFor(status), ...(list.some(c => PARSER_CODES.has(c)) ? notOnParserAnswers(extra) : extra) },
      content: { 'application/json': { schema: Ref(ErrorSchema) } }
    }
  }
  return out
}
