/**
 * The error catalogue. Every error the API answers is one of these codes, with `status` equal to the
 * HTTP status. Clients branch on `code`; `message` is for people and may change.
 * docs/reference/errors.md is generated from this list (npm run docs).
 */
export const ERROR_CODES = {
  bad_request: { status: 400, description: 'The request is not valid HTTP/1.1: a malformed request line, header or framing, a fragment (`#`) in the target, a missing, repeated or invalid Host, or Transfer-Encoding in an HTTP/1.0 request (answered before routing; the connection is closed).' },
  validation_failed: { status: 400, description: 'The request body is missing a required field, has an unknown field, or a value breaks its rule.' },
  invalid_parameter: { status: 400, description: 'A query or path parameter is malformed, out of range, repeated, unknown, or a cursor is tampered with or reused with another filter.' },
  invalid_json: { status: 400, description: 'The request body is not valid UTF-8 JSON, or uses a forbidden key such as __proto__.' },
  unauthorized: { status: 401, description: 'The bearer API key is missing, malformed, unknown or revoked.' },
  key_expired: { status: 401, description: 'The bearer API key has expired (`WWW-Authenticate` says so too); use its successor.' },
  insufficient_scope: { status: 403, description: 'The API key is valid but lacks the scope this operation needs, named in `WWW-Authenticate` (`scope="…"`); use a key that holds it.' },
  not_found: { status: 404, description: 'No such route, or no animal with that id.' },
  method_not_allowed: { status: 405, description: 'The route exists but not for this method; see the Allow header.' },
  request_timeout: { status: 408, description: 'The whole request was not received within REQUEST_TIMEOUT_MS; the connection is closed.' },
  idempotency_key_in_use: { status: 409, description: 'A request with the same Idempotency-Key is still being processed; retry after it finished.' },
  gone: { status: 410, description: 'The operation was removed at its sunset date; the message names the replacement.' },
  precondition_failed: { status: 412, description: 'If-Match names no current entity tag of the resource read: it changed since the client read it.' },
  payload_too_large: { status: 413, description: 'The request body is larger than the body limit.' },
  uri_too_long: { status: 414, description: 'The request target (path and query) is longer than 8 KiB (answered before routing; the connection is closed).' },
  unsupported_media_type: { status: 415, description: 'The request body is not application/json in UTF-8 (one charset parameter at most), or is sent with a Content-Encoding other than identity.' },
  range_not_satisfiable: { status: 416, description: 'The Range header names no byte range within the file asked for (a static file of the docs page); `Content-Range` gives its length.' },
  expectation_failed: { status: 417, description: 'The Expect header names an expectation other than 100-continue.' },
  idempotency_key_reused: { status: 422, description: 'The Idempotency-Key was already used with a different request body.' },
  rate_limited: { status: 429, description: 'Too many requests for this API key, or too many failed authentications from this address; see Retry-After.' },
  header_too_large: { status: 431, description: 'The request line and headers are larger than 16 KiB; the connection is closed.' },
  internal_error: { status: 500, description: 'An unexpected failure; details are logged with the request id, never returned.' },
  not_implemented: { status: 501, description: 'The route is named by the interface but not specified (GET /v1/store/orders), or the body is sent with a transfer coding other than chunked (answered before routing; the connection is closed).' },
  service_unavailable: { status: 503, description: 'The store is unavailable, the service is overloaded, it is starting (a SQLite store is checked before it is served) or it is shutting down; see Retry-After. On a create it means nothing was written.' },
  store_gone: { status: 503, description: 'The SQLite database file this instance opened was removed, replaced or overwritten, or is malformed: it acknowledges no create until an operator restores the file and restarts it (its /readyz says the same). Retry on another instance.' },
  http_version_not_supported: { status: 505, description: 'The request line names an HTTP version whose major version is not 1 (HTTP/2.0 over this connection, HTTP/3.0); send HTTP/1.1.' },
  outcome_unknown: { status: 503, description: 'A create whose commit was sent but never confirmed (PostgreSQL stalled or the connection was lost; SQLite committed it but could not flush it to disk): it may or may not have been written. Retry with the same Idempotency-Key: the retry answers the pet if it was written, or creates it once if not. Without a key a retry may create a second pet.' }
} as const satisfies Record<string, { status: number, description: string }>

export type ErrorCode = keyof typeof ERROR_CODES

/** The body of every error response. */
export interface ErrorBody {
  code: string
  message: string
  status: number
  details?: FieldError[]
}

/** One broken rule of a request body: the field (a dotted path) and the sentence `message` holds for it. */
export interface FieldError {
  field: string
  message: string
}

/** An error the API answers as-is: its code, status and message reach the client. */
export class ApiError extends Error {
  readonly statusCode: number

  /** `details`: each broken rule of a body, when the error is about its fields (validation_failed). */
  constructor (readonly code: ErrorCode, message: string, readonly headers?: Record<string, string>, readonly details?: FieldError[]) {
    // An answer for the client, never logged with a stack (the error handler logs only the errors
    // behind a 500, with theirs): capturing the frames would be the dearest step of an error response.
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(message)
    Error.stackTraceLimit = limit
    this.name = 'ApiError'
    this.statusCode = ERROR_CODES[code].status
  }

  toBody (): ErrorBody {
    const body: ErrorBody = { code: this.code, message: this.message, status: this.statusCode }
    if (this.details !== undefined) body.details = this.details
    return body
  }
}

/** Thrown by a store when the database cannot be reached or refuses work (disk full, read-only, down). */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError'
}

/** What a client is told while a start's store is still being checked (plugins/store-opening.ts). */
export const STORE_OPENING_MESSAGE = 'the service is starting: its store is being checked; retry shortly'

/**
 * Thrown by a SQLite store that a server start is still checking and migrating (sqlite/opening.ts):
 * nothing is read or written before its file has passed the check.
 */
export class StoreOpeningError extends StoreUnavailableError {
  constructor (message = 'the store is being checked before it is served') {
    super(message)
    this.name = 'StoreOpeningError'
  }
}

/** Why a SQLite store's file is no longer the one it opened (src/store/sqlite/store-file.ts). */
export type StoreGoneReason = 'removed' | 'replaced' | 'overwritten' | 'malformed'

/**
 * Thrown by the SQLite store once the file it opened is no longer the one at its path (removed,
 * replaced, overwritten in place) or reads as malformed: nothing is acknowledged from then on. The
 * message is the client's (no path); the store logs the operator's line once, with the path.
 */
export class StoreGoneError extends StoreUnavailableError {
  constructor (readonly reason: StoreGoneReason, options?: { cause?: unknown }) {
    super(`the store's database file was ${reason === 'malformed' ? 'found malformed' : reason} under the running instance: it acknowledges no create until an operator restores the file and restarts it`, options)
    this.name = 'StoreGoneError'
  }
}

/**
 * A StoreUnavailableError of a write whose commit was sent and never confirmed: the database may
 * still commit it (it read the commit after the service stopped waiting), so the write may or may
 * not have happened. Answered 503 `outcome_unknown`, never as "nothing was written".
 */
export class OutcomeUnknownError extends StoreUnavailableError {
  override name = 'OutcomeUnknownError'
}

/** A start-up or CLI failure whose message is already one line for people, naming the setting to look at. */
export class DescribedError extends Error {}
