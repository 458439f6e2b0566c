import type { RetryOptions } from './types.js'

/** The retry policy with its defaults filled in. */
export interface RetryPolicy {
  /** How many times one request may be sent again. */
  retries: number
  /** The longest wait before one retry, in ms. */
  maxDelayMs: number
}

/** The policy when `ClientOptions.retry` is not given: two retries, waits of at most 30 s. */
export const DEFAULT_RETRY: RetryPolicy = { retries: 2, maxDelayMs: 30_000 }
/** Wait before retry n (0-based) when the answer names no Retry-After. */
const BACKOFF_BASE_MS = 250

/**
 * The policy of `ClientOptions.retry`, defaults filled in.
 * @param options The option as given; `false` means no retry, undefined the defaults.
 * @throws {RangeError} When `retries` is not an integer ≥ 0 or `maxDelayMs` not a number ≥ 0.
 */
export function retryPolicy (options: RetryOptions | false | undefined): RetryPolicy {
  if (options === false) return { retries: 0, maxDelayMs: 0 }
  const retries = options?.retries ?? DEFAULT_RETRY.retries
  const maxDelayMs = options?.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs
  if (!Number.isInteger(retries) || retries < 0) throw new RangeError('retry.retries: must be an integer ≥ 0')
  if (!(maxDelayMs >= 0)) throw new RangeError('retry.maxDelayMs: must be a number ≥ 0')
  return { retries, maxDelayMs }
}

/**
 * Retry-After (RFC 9110 §10.2.3) in ms from now: delay-seconds or an HTTP-date; undefined when absent or unreadable.
 * @param header The header's value, or null when the answer had none.
 * @param now The time to count an HTTP-date from, in ms since the epoch (default: now).
 * @example
 * parseRetryAfter('2') // 2000
 */
export function parseRetryAfter (header: string | null, now: number = Date.now()): number | undefined {
  if (header === null) return undefined
  const value = header.trim()
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * How long to wait before sending again after attempt `attempt` (0-based) was answered with
 * `status`, or undefined when it must not be sent again. Only 429 and 503 are retried, after the
 * answer's `Retry-After` (not at all when it exceeds `maxDelayMs`), else after 250 ms doubled per
 * attempt, at most `maxDelayMs`.
 * @param policy The client's retry policy.
 * @param attempt The attempt just answered, 0-based.
 * @param status Its HTTP status.
 * @param retryAfterMs Its `Retry-After`, in ms, if it had one.
 */
export function retryDelay (policy: RetryPolicy, attempt: number, status: number, retryAfterMs: number | undefined): number | undefined {
  if (status !== 429 && status !== 503) return undefined
  if (attempt >= policy.retries) return undefined
  if (retryAfterMs !== undefined) return retryAfterMs <= policy.maxDelayMs ? retryAfterMs : undefined
  return Math.min(policy.maxDelayMs, BACKOFF_BASE_MS * 2 ** attempt)
}

/**
 * Resolves after ms, or rejects with the signal's reason as soon as it aborts.
 * @param ms How long to wait.
 * @param signal Ends the wait early, rejecting.
 */
export async function sleep (ms: number, signal: AbortSignal | undefined): Promise<void> {
  signal?.throwIfAborted()
  await new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
