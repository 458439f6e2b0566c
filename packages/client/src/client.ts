import { parse as parseJson, stringify as stringifyJson } from 'lossless-json'
import { PetstoreConnectionError, PetstoreError, PetstoreInsufficientScopeError, PetstoreKeyExpiredError, PetstoreTimeoutError, type ErrorBody } from './errors.js'
import { parseLinkHeader } from './links.js'
import { parseRetryAfter, retryDelay, retryPolicy, sleep, type RetryPolicy } from './retry.js'
import type { CallOptions, ClientOptions, CreatePetOptions, DeprecationNotice, ListPetsParams, NewPet, Pet, PetsPage, PetStatus } from './types.js'

/** What the server accepts as Idempotency-Key: printable ASCII without spaces or double quotes. */
const IDEMPOTENCY_KEY = /^[\x21\x23-\x7e]{1,255}$/

interface Outgoing {
  method: 'GET' | 'POST'
  url: string
  body?: string
  headers?: Record<string, string>
  /** Safe to send twice: GETs, and POSTs with an Idempotency-Key. */
  repeatable: boolean
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

function toBigInt (value: unknown, field: string): bigint {
  if (typeof value === 'bigint') return value
  throw new PetstoreError({ code: 'unexpected_response', message: `field ${field} is not an integer`, status: 0 })
}

function toPet (raw: unknown): Pet {
  const r = raw as Record<string, unknown>
  return { id: toBigInt(r.id, 'id'), name: String(r.name), categoryId: toBigInt(r.categoryId, 'categoryId'), status: r.status as PetStatus }
}

function checkTimeout (timeoutMs: number | undefined, where: string): void {
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) throw new RangeError(`${where}: must be a number of ms > 0`)
}

/**
 * A client of one Petstore service for one API key; made by {@link createClient}. Every operation
 * sends `Authorization: Bearer <apiKey>`, parses int64 fields exactly (as `bigint`), retries a 429 or
 * 503 when the request is safe to repeat (see `ClientOptions.retry`), and reports a `Deprecation`
 * header once per operation through `onDeprecation`.
 *
 * Every operation rejects with:
 * - {@link PetstoreError} when the service answers an error (its `code`, `status` and `requestId`),
 *   or an answer that is not the API's (`code` `unexpected_response`); the subclasses
 *   {@link PetstoreInsufficientScopeError} (403) and {@link PetstoreKeyExpiredError} (401) for the two
 *   refusals a caller handles apart;
 * - {@link PetstoreConnectionError} when the service cannot be reached or the connection breaks;
 * - {@link PetstoreTimeoutError} when the call's `timeoutMs` passes;
 * - the signal's reason when the call's `signal` aborts it.
 */
export class PetstoreClient {
  private readonly baseUrl: string
  private readonly apiKey: string
  private readonly fetch: typeof fetch
  private readonly onDeprecation: (n: DeprecationNotice) => void
  private readonly timeoutMs: number | undefined
  private readonly retry: RetryPolicy
  private readonly warned = new Set<string>()

  /**
   * Prefer {@link createClient}, which does the same.
   * @param options Where the service is, the API key, and the client's defaults.
   * @throws {TypeError} When `baseUrl` is not an http(s) URL ending in `/v1`, or `apiKey` is missing or blank.
   * @throws {RangeError} When `timeoutMs` is not a number > 0, or `retry` holds a value out of range.
   */
  constructor (options: ClientOptions) {
    checkTimeout(options.timeoutMs, 'timeoutMs')
    // Refused here, before any request: from JavaScript (or an unset environment variable) a missing
    // key would otherwise go out as `Bearer undefined` and come back as a puzzling 401.
    if (typeof options.apiKey !== 'string' || !/^\S+$/.test(options.apiKey)) {
      throw new TypeError('apiKey: required, an API key such as psk_… (make one with `bin/petstore keys create --name NAME`)')
    }
    this.baseUrl = checkBaseUrl(options.baseUrl)
    this.apiKey = options.apiKey
    this.fetch = options.fetch ?? globalThis.fetch
    this.onDeprecation = options.onDeprecation ?? defaultDeprecationWarning
    this.timeoutMs = options.timeoutMs
    this.retry = retryPolicy(options.retry)
  }

  /**
   * listPets: one page of animals in ascending id order. Follow `nextCursor` (with the same `status`)
   * or use {@link PetstoreClient.pets} to walk every page.
   * @param params `limit` (1 to 100, the server's default 20), `status` filter, `cursor` of a previous page.
   * @param options Per-call `signal` and `timeoutMs`.
   * @returns The page's animals, and the next page's URL and cursor unless it is the last page.
   * @throws {PetstoreError} `invalid_parameter` (400) for a limit out of range or a cursor that is not
   *   this filter's; the errors every operation may reject with (see {@link PetstoreClient}).
   */
  async listPets (params: ListPetsParams = {}, options: CallOptions = {}): Promise<PetsPage> {
    const query = new URLSearchParams()
    if (params.limit !== undefined) query.set('limit', String(params.limit))
    if (params.status !== undefined) query.set('status', params.status)
    if (params.cursor !== undefined) query.set('cursor', params.cursor)
    const qs = query.toString()
    return await this.page(`${this.baseUrl}/pets${qs === '' ? '' : `?${qs}`}`, options)
  }

  /**
   * createPet: stores the animal; resolves to it with its assigned id. With `idempotencyKey`, a
   * repeat of the same call answers the animal created the first time (and may be retried on 429/503);
   * without one the request is never sent twice.
   * @param pet `name` (1 to 255 characters, not blank), `categoryId` (a bigint, or a safe-integer
   *   number), optional `status` (`available` by default).
   * @param options Per-call `signal`, `timeoutMs` and `idempotencyKey`.
   * @returns The stored animal, as the service answered it.
   * @throws {RangeError} Before sending: `categoryId` a number beyond 2^53, or a malformed `idempotencyKey`.
   * @throws {PetstoreError} `validation_failed` (400) for a body the service refuses; `outcome_unknown`
   *   (503) when the service cannot tell whether the pet was stored (repeat the call with the same
   *   `idempotencyKey`); the errors every operation may reject with (see {@link PetstoreClient}).
   */
  async createPet (pet: NewPet, options: CreatePetOptions = {}): Promise<Pet> {
    if (typeof pet.categoryId === 'number' && !Number.isSafeInteger(pet.categoryId)) {
      throw new RangeError('categoryId: pass a bigint for integers beyond 2^53 (a number here has already lost digits)')
    }
    const key = options.idempotencyKey
    if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
      throw new RangeError('idempotencyKey: 1 to 255 printable ASCII characters without spaces or double quotes (a UUID fits)')
    }
    const { body } = await this.call('createPet', {
      method: 'POST',
      url: `${this.baseUrl}/pets`,
      body: stringifyJson(pet) as string,
      headers: key === undefined ? {} : { 'idempotency-key': key },
      repeatable: key !== undefined
    }, options)
    return toPet(body)
  }

  /**
   * getPet: one animal by id.
   * @param id The animal's id (a bigint keeps ids beyond 2^53 exact).
   * @param options Per-call `signal` and `timeoutMs`.
   * @returns The animal.
   * @throws {PetstoreError} `not_found` (404) when no animal has this id; `gone` (410) from the
   *   operation's sunset on; the errors every operation may reject with (see {@link PetstoreClient}).
   * @deprecated The service removes it at its sunset (5 December 2030); use `listPets` / `pets()` with a status filter.
   */
  async getPet (id: bigint | number | string, options: CallOptions = {}): Promise<Pet> {
    const { body } = await this.call('getPet', { method: 'GET', url: `${this.baseUrl}/pets/${encodeURIComponent(String(id))}`, repeatable: true }, options)
    return toPet(body)
  }

  /**
   * Every animal (optionally with one status), page after page, following Link rel="next" until the
   * last page. A walk sees each animal exactly once, even while animals are being added. `signal`
   * aborts the walk; `timeoutMs` applies to each page.
   * @param params `status` filter, `pageSize` (1 to 100, the server's default 20), `signal`, `timeoutMs`.
   * @throws The errors of {@link PetstoreClient.listPets}, from the page that failed.
   * @example
   * for await (const pet of client.pets({ status: 'available' })) console.log(pet.id, pet.name)
   */
  async * pets (params: { status?: PetStatus | undefined, pageSize?: number | undefined } & CallOptions = {}): AsyncGenerator<Pet, void, undefined> {
    const options: CallOptions = { signal: params.signal, timeoutMs: params.timeoutMs }
    let page = await this.listPets({ limit: params.pageSize, status: params.status }, options)
    for (;;) {
      yield * page.pets
      if (page.next === undefined) return
      page = await this.page(page.next, options)
    }
  }

  private async page (url: string, options: CallOptions): Promise<PetsPage> {
    const { res, body } = await this.call('listPets', { method: 'GET', url, repeatable: true }, options)
    const next = parseLinkHeader(res.headers.get('link')).get('next')
    const nextUrl = next === undefined ? undefined : new URL(next, this.baseUrl).href
    return {
      pets: (body as unknown[]).map(toPet),
      next: nextUrl,
      nextCursor: nextUrl === undefined ? undefined : new URL(nextUrl).searchParams.get('cursor') ?? undefined
    }
  }

  /** Sends the request, again after a 429/503 when it is repeatable and the policy allows, until the deadline. */
  private async call (operationId: string, req: Outgoing, options: CallOptions): Promise<{ res: Response, body: unknown }> {
    checkTimeout(options.timeoutMs, 'timeoutMs')
    const timeoutMs = options.timeoutMs ?? this.timeoutMs
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
    const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs)
    const signals = [options.signal, timeout].filter((s): s is AbortSignal => s !== undefined)
    const signal = signals.length <= 1 ? signals[0] : AbortSignal.any(signals)
    // Why the call stopped: the caller's abort (its reason, as fetch does), our deadline, or the network.
    const failure = (err: unknown): unknown => {
      if (options.signal?.aborted === true) return options.signal.reason
      if (timeout?.aborted === true) return new PetstoreTimeoutError(req.url, timeoutMs!)
      return new PetstoreConnectionError(req.url, err)
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}`, accept: 'application/json', ...req.headers }
    if (req.body !== undefined) headers['content-type'] = 'application/json'
    for (let attempt = 0; ; attempt++) {
      let res: Response
      let text: string
      try {
        signal?.throwIfAborted()
        res = await this.fetch(req.url, { method: req.method, headers, ...(req.body !== undefined ? { body: req.body } : {}), ...(signal !== undefined ? { signal } : {}) })
        text = await res.text()
      } catch (err) {
        throw failure(err)
      }
      this.noticeDeprecation(operationId, res)
      const body = parseBody(text)
      if (res.ok) {
        if (body === undefined) throw new PetstoreError({ code: 'unexpected_response', message: `${operationId}: the answer is not JSON`, status: res.status }, res.headers.get('x-request-id') ?? undefined)
        return { res, body }
      }
      const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'))
      const error = toError(operationId, res, body, text, retryAfterMs)
      const wait = req.repeatable ? retryDelay(this.retry, attempt, res.status, retryAfterMs) : undefined
      // A wait that would outlast the deadline is not started: the answer says more than a timeout would.
      if (wait === undefined || Date.now() + wait >= deadline) throw error
      try {
        await sleep(wait, signal)
      } catch (err) {
        throw failure(err)
      }
    }
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

function parseBody (text: string): unknown {
  try {
    return parseJson(text, null, parseNumber)
  } catch {
    return undefined
  }
}

/** The `scope` parameter of a bearer challenge (RFC 6750 §3), e.g. `pets:write`. */
function challengeScope (header: string | null): string | undefined {
  return header === null ? undefined : /\bscope="([^"]*)"/.exec(header)?.[1]
}

function toError (operationId: string, res: Response, body: unknown, text: string, retryAfterMs: number | undefined): PetstoreError {
  const e = body as Record<string, unknown> | undefined
  const isError = typeof e === 'object' && e !== null && typeof e.code === 'string' && typeof e.message === 'string'
  const requestId = res.headers.get('x-request-id') ?? undefined
  const errorBody: ErrorBody = isError
    ? { code: e.code as string, message: e.message as string, status: Number(e.status), ...(Array.isArray(e.details) ? { details: e.details as ErrorBody['details'] } : {}) }
    : { code: 'unexpected_response', message: `${operationId}: HTTP ${res.status} without an Error object: ${text.slice(0, 200)}`, status: res.status }
  if (errorBody.code === 'insufficient_scope') return new PetstoreInsufficientScopeError(errorBody, requestId, challengeScope(res.headers.get('www-authenticate')))
  if (errorBody.code === 'key_expired') return new PetstoreKeyExpiredError(errorBody, requestId)
  return new PetstoreError(errorBody, requestId, retryAfterMs)
}

/**
 * The base address without its trailing slash, or a TypeError naming the form expected: an http or
 * https URL whose path ends in `/v1` (every operation's path is relative to it, so an address without
 * `/v1` would fail only later, as a 404 on every call).
 */
function checkBaseUrl (baseUrl: unknown): string {
  let url: URL | undefined
  try {
    url = typeof baseUrl === 'string' ? new URL(baseUrl) : undefined
  } catch {}
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || !/\/v1\/?$/.test(url.pathname) || url.search !== '' || url.hash !== '') {
    throw new TypeError(`baseUrl must be an http(s) URL ending in /v1, like http://127.0.0.1:8080/v1 (got ${typeof baseUrl === 'string' ? baseUrl : String(baseUrl)})`)
  }
  return (baseUrl as string).replace(/\/+$/, '')
}

/**
 * A client for one base address and key.
 *
 * `baseUrl` is the service's address ending in `/v1`, over http or https (`http://127.0.0.1:8080/v1`,
 * `https://api.example.org/v1`; a trailing slash is fine). Any other form (no `/v1`, another scheme,
 * a query or fragment) throws a TypeError at once, naming the expected form, before any request.
 * `apiKey` is required too (a TypeError when missing or blank).
 * @param options Where the service is, the API key, and the client's defaults (timeout, retries,
 *   deprecation notices, the fetch to use).
 * @returns A {@link PetstoreClient}; it holds no connection of its own, so it needs no closing.
 * @throws {TypeError} When `baseUrl` or `apiKey` is not of the form above.
 * @throws {RangeError} When `timeoutMs` is not a number > 0, or `retry` holds a value out of range.
 * @example
 * import { createClient, PetstoreError } from '@petstore/client'
 *
 * const client = createClient({ baseUrl: 'http://127.0.0.1:8080/v1', apiKey: process.env.PETSTORE_API_KEY!, timeoutMs: 10_000 })
 * const pet = await client.createPet({ name: 'Rex', categoryId: 1n }, { idempotencyKey: crypto.randomUUID() })
 * try {
 *   await client.listPets({ limit: 500 })
 * } catch (err) {
 *   if (err instanceof PetstoreError) console.error(err.status, err.code, err.requestId)
 * }
 */
export function createClient (options: ClientOptions): PetstoreClient {
  return new PetstoreClient(options)
}
