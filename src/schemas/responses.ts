import type { TSchema } from 'typebox'
import { ERROR_CODES, type ErrorCode } from '../errors.js'
import { ErrorSchema, Ref } from './common.js'

// Read by Fastify (it serializes with `content[mediaType].schema`) and by @fastify/swagger (the
// document), so a route's `response` map is the one description of what it answers.

/** `x-required`: every such response carries it (the OpenAPI plugin makes it `required: true`). */
const header = (description: string, extra: { pattern?: string, example?: string, 'x-required'?: boolean } = {}) =>
  ({ type: 'string' as const, description, ...extra })
type HeaderMap = Record<string, ReturnType<typeof header>>

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

export function notModified (headers: HeaderMap = {}): object {
  return {
    description: 'Not modified: `If-None-Match` names the current ETag; no body.',
    headers: { 'X-Request-Id': Headers.requestId, ETag: Headers.etagNotModified, ...headers },
    type: 'null'
  }
}

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
  503: 'Service unavailable',
  505: 'HTTP version not supported'
}

/** Headers an error of this status always carries, wherever it comes from. */
export function headersFor (status: number): HeaderMap {
  if (status === 401 || status === 403) return { 'WWW-Authenticate': Headers.wwwAuthenticate }
  if (status === 503 || status === 429) return { 'Retry-After': Headers.retryAfter }
  return {}
}

/** Decided at the edge (the parser, hardening.ts, `Expect`, shutdown, overload), so any request can get them. */
export const EDGE_CODES = ['bad_request', 'request_timeout', 'uri_too_long', 'expectation_failed', 'header_too_large', 'not_implemented', 'service_unavailable', 'http_version_not_supported'] as const satisfies readonly ErrorCode[]

/** Node's HTTP parser can answer these before routing, with none of an operation's own headers. */
const PARSER_CODES: ReadonlySet<ErrorCode> = new Set(['bad_request', 'request_timeout', 'uri_too_long', 'header_too_large', 'http_version_not_supported'])

/** Codes only the parser answers: a status given only by these carries none of an operation's own headers. */
const PARSER_ONLY: ReadonlySet<ErrorCode> = new Set(['request_timeout', 'header_too_large'])

/** Answered before the rate limits count: a status given only by these carries no RateLimit headers. */
const BEFORE_LIMITS: ReadonlySet<ErrorCode> = new Set([...PARSER_CODES, 'not_implemented'])

function beforeLimits (headers: HeaderMap): HeaderMap {
  const { RateLimit: _limit, 'RateLimit-Policy': _policy, ...rest } = headers
  return rest
}

/** Listed, not promised: the parser's answer with the same status lacks them. */
function notOnParserAnswers (headers: HeaderMap): HeaderMap {
  return Object.fromEntries(Object.entries(headers).map(([name, { 'x-required': _required, ...rest }]) => [name, rest]))
}

/** What authentication (plugins/auth.ts) can answer to any /v1 request before it reaches an operation. */
export const AUTHENTICATION_CODES = ['unauthorized', 'key_expired', 'rate_limited'] as const satisfies readonly ErrorCode[]
/** ...and to an operation, which needs a scope (its `config.scope`). */
export const AUTHORIZATION_CODES = [...AUTHENTICATION_CODES, 'insufficient_scope'] as const satisfies readonly ErrorCode[]

/** The codes (each once, in the order given) grouped by their status, in ascending status order. */
export function codesByStatus (codes: Iterable<ErrorCode>): Array<[number, ErrorCode[]]> {
  return [...Map.groupBy(new Set(codes), code => ERROR_CODES[code].status)].sort((a, b) => a[0] - b[0])
}

/** One Error response per status, its description naming the codes; the edge codes are always added. */
export function errorResponses (codes: readonly ErrorCode[], extraHeaders: HeaderMap = {}): Record<number, object> {
  const out: Record<number, object> = {}
  for (const [status, list] of codesByStatus([...codes, ...EDGE_CODES])) {
    const edgeOnly = list.every(c => BEFORE_LIMITS.has(c) && !codes.includes(c))
    const extra = list.every(c => PARSER_ONLY.has(c)) ? {} : edgeOnly ? beforeLimits(extraHeaders) : extraHeaders
    // The codes only: what each means is the Error schema's x-error-codes, once.
    const named = list.map(c => `\`${c}\``).join(', ')
    out[status] = {
      description: `${STATUS_TEXT[status] ?? 'Error'}: an \`Error\` whose \`code\` ${list.length === 1 ? 'is' : 'is one of'} ${named}.`,
      headers: { 'X-Request-Id': Headers.requestId, ...headersFor(status), ...(list.some(c => PARSER_CODES.has(c)) ? notOnParserAnswers(extra) : extra) },
      content: { 'application/json': { schema: Ref(ErrorSchema) } }
    }
  }
  return out
}
