import { parse as parseJson, stringify as stringifyJson } from 'lossless-json'

/**
 * A typed client for the Petstore v1 API (document: GET /openapi.json of any server).
 *
 * int64 fields (`id`, `categoryId`) are BigInt: JSON.parse would round values past 2^53, so
 * responses are parsed losslessly. `createPet` takes a bigint or a safe-integer number.
 */

/** Availability status of an animal. */
export type PetStatus = 'available' | 'pending' | 'sold'
export const PET_STATUSES: readonly PetStatus[] = ['available', 'pending', 'sold']

/** An animal as the service returns it. */
export interface Pet {
  /** Assigned by the service; int64, exact. */
  id: bigint
  name: string
  /** int64, exact. */
  categoryId: bigint
  status: PetStatus
}

/** The body of createPet. `status` defaults to `available` on the server. */
export interface NewPet {
  name: string
  /** A bigint, or a number that is a safe integer (|n| ≤ 2^53 − 1). */
  categoryId: bigint | number
  status?: PetStatus
}

/** The error codes of the service's catalogue (`x-error-codes` in the document). */
export const ERROR_CODES = [
  'bad_request', 'validation_failed', 'invalid_parameter', 'invalid_json', 'unauthorized', 'not_found',
  'method_not_allowed', 'request_timeout', 'idempotency_key_in_use', 'gone', 'payload_too_large',
  'unsupported_media_type', 'idempotency_key_reused', 'rate_limited', 'header_too_large',
  'internal_error', 'not_implemented', 'service_unavailable'
] as const
/** A catalogue code, or `unexpected_response` when the answer was not an Error object (e.g. from a proxy). */
export type ErrorCode = typeof ERROR_CODES[number] | 'unexpected_response'

/** The Error object every failed call answers. */
export interface ErrorBody {
  code: ErrorCode
  message: string
  status: number
}

/** A failed call: the service's Error object, its HTTP status and the request id to quote in a report. */
export class PetstoreError extends Error {
  override readonly name = 'PetstoreError'
  readonly code: ErrorCode
  readonly status: number
  readonly body: ErrorBody
  readonly requestId: string | undefined

  constructor (body: ErrorBody, requestId?: string) {
    super(`${body.status} ${body.code}: ${body.message}`)
    this.code = body.code
    this.status = body.status
    this.body = body
    this.requestId = requestId
  }
}

/** Said when a response carries `Deprecation` (RFC 9745): the operation will go away. */
export interface DeprecationNotice {
  operationId: string
  /** The Deprecation header as sent, e.g. `@1767225600`. */
  deprecation: string
  /** When the operation stops working (Sunset header), if announced. */
  sunset: Date | undefined
  /** The replacement (Link rel="successor-version"), as an absolute URL, if announced. */
  successor: string | undefined
}

export interface ListPetsParams {
  /** 1 to 100; the server's default is 20. */
  limit?: number
  status?: PetStatus
  /** From a previous page's `nextCursor`; only valid with the same `status`. */
  cursor?: string
}

export interface PetsPage {
  pets: Pet[]
  /** Absolute URL of the next page (Link rel="next"), absent on the last page. */
  next: string | undefined
  /** The cursor of the next page, for listPets({ cursor }), absent on the last page. */
  nextCursor: string | undefined
}

export interface ClientOptions {
  /** The base address, ending in /v1, e.g. http://127.0.0.1:8080/v1 */
  baseUrl: string
  /** An API key (`npx petstore keys create --name NAME`). */
  apiKey: string
  /**
   * Called once per operation per client when a response carries `Deprecation`. Default: a
   * process warning (console.warn outside Node). Pass `() => {}` to silence.
   */
  onDeprecation?: (notice: DeprecationNotice) => void
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch
}

function defaultDeprecationWarning (n: DeprecationNotice): void {
  const text = `Petstore ${n.operationId} is deprecated${n.sunset === undefined ? '' : ` and stops working on ${n.sunset.toUTCString()}`}${n.successor === undefined ? '' : `; use ${n.successor}`}`
  const proc = (globalThis as { process?: { emitWarning?: (w: string, o: { type: string, code: string }) => void } }).process
  if (proc?.emitWarning !== undefined) proc.emitWarning(text, { type: 'DeprecationWarning', code: 'PETSTORE_DEPRECATED' })
  else console.warn(text)
}

/** Integers become BigInt (exact); other numbers stay numbers. */
function parseNumber (text: string): number | bigint {
  return /^-?\d+$/.test(text) ? BigInt(text) : Number(text)
}

/** The links of a Link header (RFC 8288), by rel. */
export function parseLinkHeader (header: string | null): Map<string, string> {
  const links = new Map<string, string>()
  if (header === null) return links
  for (const m of header.matchAll(/<([^>]*)>((?:\s*;\s*[^;,]+)*)/g)) {
    const rel = /;\s*rel\s*=\s*"?([^";,]+)"?/i.exec(m[2] ?? '')?.[1]
    if (rel !== undefined) for (const r of rel.trim().split(/\s+/)) if (!links.has(r)) links.set(r.toLowerCase(), m[1]!)
  }
  return links
}

function toBigInt (value: unknown, field: string): bigint {
  if (typeof value === 'bigint') return value
  throw new PetstoreError({ code: 'unexpected_response', message: `field ${field} is not an integer`, status: 0 })
}

function toPet (raw: unknown): Pet {
  const r = raw as Record<string, unknown>
  return { id: toBigInt(r.id, 'id'), name: String(r.name), categoryId: toBigInt(r.categoryId, 'categoryId'), status: r.status as PetStatus }
}

export class PetstoreClient {
  private readonly baseUrl: string
  private readonly apiKey: string
  private readonly fetch: typeof fetch
  private readonly onDeprecation: (n: DeprecationNotice) => void
  private readonly warned = new Set<string>()

  constructor (options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.apiKey = options.apiKey
    this.fetch = options.fetch ?? globalThis.fetch
    this.onDeprecation = options.onDeprecation ?? defaultDeprecationWarning
  }

  /** listPets: one page of animals in ascending id order. */
  async listPets (params: ListPetsParams = {}): Promise<PetsPage> {
    const query = new URLSearchParams()
    if (params.limit !== undefined) query.set('limit', String(params.limit))
    if (params.status !== undefined) query.set('status', params.status)
    if (params.cursor !== undefined) query.set('cursor', params.cursor)
    const qs = query.toString()
    return await this.page(`${this.baseUrl}/pets${qs === '' ? '' : `?${qs}`}`)
  }

  /** createPet: stores the animal; resolves to it with its assigned id. */
  async createPet (pet: NewPet): Promise<Pet> {
    if (typeof pet.categoryId === 'number' && !Number.isSafeInteger(pet.categoryId)) {
      throw new RangeError('categoryId: pass a bigint for integers beyond 2^53 (a number here has already lost digits)')
    }
    const { body } = await this.call('createPet', `${this.baseUrl}/pets`, { method: 'POST', body: stringifyJson(pet) as string })
    return toPet(body)
  }

  /**
   * getPet: one animal by id.
   * @deprecated The service removes it at its sunset (5 December 2030); use `listPets` / `pets()` with a status filter.
   */
  async getPet (id: bigint | number | string): Promise<Pet> {
    const { body } = await this.call('getPet', `${this.baseUrl}/pets/${encodeURIComponent(String(id))}`, { method: 'GET' })
    return toPet(body)
  }

  /**
   * Every animal (optionally with one status), page after page, following Link rel="next" until the
   * last page. A walk sees each animal exactly once, even while animals are being added.
   */
  async * pets (params: { status?: PetStatus, pageSize?: number } = {}): AsyncGenerator<Pet, void, undefined> {
    let page = await this.listPets({ limit: params.pageSize, status: params.status })
    for (;;) {
      yield * page.pets
      if (page.next === undefined) return
      page = await this.page(page.next)
    }
  }

  private async page (url: string): Promise<PetsPage> {
    const { res, body } = await this.call('listPets', url, { method: 'GET' })
    const next = parseLinkHeader(res.headers.get('link')).get('next')
    const nextUrl = next === undefined ? undefined : new URL(next, this.baseUrl).href
    return {
      pets: (body as unknown[]).map(toPet),
      next: nextUrl,
      nextCursor: nextUrl === undefined ? undefined : new URL(nextUrl).searchParams.get('cursor') ?? undefined
    }
  }

  private async call (operationId: string, url: string, init: { method: string, body?: string }): Promise<{ res: Response, body: unknown }> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}`, accept: 'application/json' }
    if (init.body !== undefined) headers['content-type'] = 'application/json'
    const res = await this.fetch(url, { method: init.method, headers, ...(init.body !== undefined ? { body: init.body } : {}) })
    this.noticeDeprecation(operationId, res)
    const text = await res.text()
    let body: unknown
    try {
      body = parseJson(text, null, parseNumber)
    } catch {
      body = undefined
    }
    if (res.ok) {
      if (body === undefined) throw new PetstoreError({ code: 'unexpected_response', message: `${operationId}: the answer is not JSON`, status: res.status }, res.headers.get('x-request-id') ?? undefined)
      return { res, body }
    }
    const e = body as Record<string, unknown> | undefined
    const isError = typeof e === 'object' && e !== null && typeof e.code === 'string' && typeof e.message === 'string'
    throw new PetstoreError(
      isError
        ? { code: e.code as ErrorCode, message: e.message as string, status: Number(e.status) }
        : { code: 'unexpected_response', message: `${operationId}: HTTP ${res.status} without an Error object: ${text.slice(0, 200)}`, status: res.status },
      res.headers.get('x-request-id') ?? undefined
    )
  }

  private noticeDeprecation (operationId: string, res: Response): void {
    const deprecation = res.headers.get('deprecation')
    if (deprecation === null || this.warned.has(operationId)) return
    this.warned.add(operationId)
    const sunset = res.headers.get('sunset')
    const successor = parseLinkHeader(res.headers.get('link')).get('successor-version')
    this.onDeprecation({
      operationId,
      deprecation,
      sunset: sunset === null ? undefined : new Date(sunset),
      successor: successor === undefined ? undefined : new URL(successor, this.baseUrl).href
    })
  }
}

/** A client for one base address and key. */
export function createClient (options: ClientOptions): PetstoreClient {
  return new PetstoreClient(options)
}
