/**
 * The error codes of the service's catalogue (`x-error-codes` in the document) that this client
 * knows. The set is open: a later service version may answer a code not listed here (see the
 * document's `Error.code`), which the client passes through as it came.
 */
export const ERROR_CODES = [
  'bad_request', 'validation_failed', 'invalid_parameter', 'invalid_json', 'unauthorized', 'key_expired', 'insufficient_scope', 'not_found',
  'method_not_allowed', 'request_timeout', 'idempotency_key_in_use', 'gone', 'precondition_failed', 'payload_too_large', 'uri_too_long',
  'unsupported_media_type', 'range_not_satisfiable', 'expectation_failed', 'idempotency_key_reused', 'rate_limited', 'header_too_large',
  'internal_error', 'not_implemented', 'service_unavailable', 'store_gone', 'http_version_not_supported', 'outcome_unknown'
] as const
/** A code of the catalogue this client knows, or `unexpected_response` when the answer was not an Error object (e.g. from a proxy). */
export type KnownErrorCode = typeof ERROR_CODES[number] | 'unexpected_response'
/**
 * The `code` of a failed call: a known code, or any other string, a code the service added after this
 * client was built (handle it by `status`: a 4xx refuses the request, a 5xx is the service's failure).
 * `string & {}` keeps the known codes offered by editors while any string is accepted.
 */
export type ErrorCode = KnownErrorCode | (string & {})

const KNOWN: ReadonlySet<string> = new Set<string>([...ERROR_CODES, 'unexpected_response'])

/**
 * Whether `code` is one this client knows (narrows it to KnownErrorCode).
 * @param code A `PetstoreError`'s `code`.
 * @example
 * if (err instanceof PetstoreError && !isKnownErrorCode(err.code)) handleByStatus(err.status)
 */
export function isKnownErrorCode (code: string): code is KnownErrorCode {
  return KNOWN.has(code)
}

/** The Error object every failed call answers. */
export interface ErrorBody {
  /** What went wrong, for programs: one of the catalogue's codes (docs/reference/errors.md). */
  code: ErrorCode
  /** What went wrong, for people; its wording may change between versions. */
  message: string
  /** The HTTP status of the answer. */
  status: number
  /** With `validation_failed`: each broken rule of the body sent, by field. */
  details?: Array<{ field: string, message: string }>
}

/** A failed call: the service's Error object, its HTTP status and the request id to quote in a report. */
export class PetstoreError extends Error {
  override readonly name: string = 'PetstoreError'
  /** The Error object's `code`: branch on it (a code this client does not know: on `status`). */
  readonly code: ErrorCode
  /** The Error object's `status`, the HTTP status of the answer. */
  readonly status: number
  /** The Error object as the service sent it. */
  readonly body: ErrorBody
  /** The answer's `X-Request-Id`: the service logs the request under it. */
  readonly requestId: string | undefined
  /** From `Retry-After` (429, 503): how long the service asked to wait, in ms. */
  readonly retryAfterMs: number | undefined

  /**
   * Made by the client from a failed answer; a program only catches it.
   * @param body The Error object of the answer.
   * @param requestId The answer's `X-Request-Id`, when it had one.
   * @param retryAfterMs The answer's `Retry-After`, in ms.
   */
  constructor (body: ErrorBody, requestId?: string, retryAfterMs?: number) {
    super(`${body.status} ${body.code}: ${body.message}`)
    this.code = body.code
    this.status = body.status
    this.body = body
    this.requestId = requestId
    this.retryAfterMs = retryAfterMs
  }
}

/**
 * 403 `insufficient_scope`: the key is valid but may not do this. `scope` is the one the operation
 * needs (from `WWW-Authenticate`): call with a key that holds it (`petstore keys create --scope`).
 * Never retried.
 */
export class PetstoreInsufficientScopeError extends PetstoreError {
  override readonly name = 'PetstoreInsufficientScopeError'
  /** Always `insufficient_scope`. */
  override readonly code = 'insufficient_scope'
  /** The scope the operation needs (e.g. `pets:write`), from the bearer challenge; undefined when not named. */
  readonly scope: string | undefined

  /**
   * Made by the client from a 403 answer.
   * @param body The Error object of the answer.
   * @param requestId The answer's `X-Request-Id`.
   * @param scope The `scope` of its `WWW-Authenticate` challenge.
   */
  constructor (body: ErrorBody, requestId: string | undefined, scope: string | undefined) {
    super(body, requestId)
    this.scope = scope
  }
}

/** 401 `key_expired`: the key's expiry has passed; use its successor. Never retried. */
export class PetstoreKeyExpiredError extends PetstoreError {
  override readonly name = 'PetstoreKeyExpiredError'
  /** Always `key_expired`. */
  override readonly code = 'key_expired'
}

/**
 * The service could not be reached or the connection broke before a full answer (refused, reset, DNS,
 * TLS). `cause` is the underlying error; for Node's fetch its `code` says which (e.g. `ECONNREFUSED`).
 * The request may or may not have been processed when the connection broke after sending it.
 */
export class PetstoreConnectionError extends Error {
  override readonly name = 'PetstoreConnectionError'
  /** Always `connection_failed`, so `err.code` can be branched on alongside the service's codes. */
  readonly code = 'connection_failed'
  /** The URL that was being called. */
  readonly url: string

  /**
   * Made by the client when fetch fails.
   * @param url The URL that was being called.
   * @param cause What fetch threw.
   */
  constructor (url: string, cause: unknown) {
    super(`could not reach ${new URL(url).origin}: ${describeCause(cause)}`, { cause })
    this.url = url
  }
}

/** The call's deadline (`timeoutMs`) passed before it settled; retries and their waits count. */
export class PetstoreTimeoutError extends Error {
  override readonly name = 'PetstoreTimeoutError'
  /** Always `timeout`. */
  readonly code = 'timeout'
  /** The URL that was being called when the deadline passed. */
  readonly url: string
  /** The deadline that passed, in ms. */
  readonly timeoutMs: number

  /**
   * Made by the client when the call's deadline passes.
   * @param url The URL that was being called.
   * @param timeoutMs The deadline, in ms.
   */
  constructor (url: string, timeoutMs: number) {
    super(`no answer from ${new URL(url).origin} within ${timeoutMs} ms`)
    this.url = url
    this.timeoutMs = timeoutMs
  }
}

/** Node's fetch says only "fetch failed"; the reason is in its cause (and the cause's code). */
function describeCause (cause: unknown): string {
  let e: unknown = cause
  while (e instanceof Error && e.message === 'fetch failed' && e.cause !== undefined) e = e.cause
  if (e instanceof AggregateError && e.errors.length > 0) e = e.errors[0]
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code
    return typeof code === 'string' && !e.message.includes(code) ? `${code} ${e.message}` : e.message
  }
  return String(e)
}
