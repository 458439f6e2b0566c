/** Availability status of an animal. */
export type PetStatus = 'available' | 'pending' | 'sold'
/** Every {@link PetStatus}, in the document's order (e.g. to validate input or fill a menu). */
export const PET_STATUSES: readonly PetStatus[] = ['available', 'pending', 'sold']

/** An animal as the service returns it. */
export interface Pet {
  /** Assigned by the service; int64, exact. */
  id: bigint
  /** As it was sent: 1 to 255 characters. */
  name: string
  /** int64, exact. */
  categoryId: bigint
  /** Its availability. */
  status: PetStatus
}

/** The body of createPet. `status` defaults to `available` on the server. */
export interface NewPet {
  /** 1 to 255 characters (Unicode code points), not blank. */
  name: string
  /** A bigint, or a number that is a safe integer (|n| ≤ 2^53 − 1). */
  categoryId: bigint | number
  /** Its availability; the service stores `available` when it is left out. */
  status?: PetStatus | undefined
}

/** Said when a response carries `Deprecation` (RFC 9745): the operation will go away. */
export interface DeprecationNotice {
  /** The operation the answer was to, e.g. `getPet`. */
  operationId: string
  /** The Deprecation header as sent, e.g. `@1767225600`. */
  deprecation: string
  /** When the operation stops working (Sunset header), if announced. */
  sunset: Date | undefined
  /** The replacement (Link rel="successor-version"), as an absolute URL, if announced. */
  successor: string | undefined
}

/** The query of listPets. */
export interface ListPetsParams {
  /** 1 to 100; the server's default is 20. */
  limit?: number | undefined
  /** Only animals with this status. */
  status?: PetStatus | undefined
  /** From a previous page's `nextCursor`; only valid with the same `status`. */
  cursor?: string | undefined
}

/** One page of listPets. */
export interface PetsPage {
  /** The page's animals, in ascending id order. */
  pets: Pet[]
  /** Absolute URL of the next page (Link rel="next"), absent on the last page. */
  next: string | undefined
  /** The cursor of the next page, for listPets({ cursor }), absent on the last page. */
  nextCursor: string | undefined
}

/** Retries of answers that say "later": 429 `rate_limited` and 503 (`service_unavailable`; `outcome_unknown`, a keyed create whose commit was not confirmed). */
export interface RetryOptions {
  /** How many times one request is sent again (default 2; 0 turns retries off). */
  retries?: number | undefined
  /**
   * The longest wait before one retry, in ms (default 30 000). A `Retry-After` asking for longer is
   * not honoured: the call fails at once with that answer (its `retryAfterMs` says how long).
   */
  maxDelayMs?: number | undefined
}

/** The options of `createClient`: `baseUrl` and `apiKey` are required. */
export interface ClientOptions {
  /** The base address: an http(s) URL ending in /v1, e.g. http://127.0.0.1:8080/v1 (any other form throws at createClient). */
  baseUrl: string
  /** An API key (`bin/petstore keys create --name NAME`). */
  apiKey: string
  /**
   * Called once per operation per client when a response carries `Deprecation`. Default: a
   * process warning (console.warn outside Node). Pass `() => {}` to silence.
   */
  onDeprecation?: ((notice: DeprecationNotice) => void) | undefined
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch | undefined
  /** Deadline of each call in ms, retries and their waits included (default: none). A call may override it. */
  timeoutMs?: number | undefined
  /**
   * Retries of 429 and 503, honouring `Retry-After`; only for requests that are safe to repeat: GETs,
   * and createPet with an `idempotencyKey` (a POST without one is never sent twice). `false` turns them off.
   */
  retry?: RetryOptions | false | undefined
}

/** Per-call options of every operation. */
export interface CallOptions {
  /** Aborts the call (also while it waits to retry); the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined
  /** Deadline of this call in ms, retries included; overrides the client's `timeoutMs`. */
  timeoutMs?: number | undefined
}

/** Per-call options of createPet. */
export interface CreatePetOptions extends CallOptions {
  /**
   * Sent as `Idempotency-Key` (1 to 255 visible ASCII characters, e.g. a UUID): a repeat with the same
   * key and body answers the animal created the first time instead of creating another. It also
   * makes the call safe to retry after a 429 or 503.
   */
  idempotencyKey?: string | undefined
}
