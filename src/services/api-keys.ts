import crypto from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { ALL_SCOPES, type Scope } from '../schemas/scopes.js'
import type { Clock } from '../runtime/clock.js'
import type { ApiKeyGrant, ApiKeyRecord, Store } from '../store/store.js'

/** Prefix of every key, so secret scanners can recognise a leaked one. */
export const API_KEY_PREFIX = 'psk_'
const API_KEY_PATTERN = /^psk_[A-Za-z0-9_-]{43}$/

/** SHA-256 (hex): the only form in which a key is stored. */
export function hashApiKey (key: string): string {
  return crypto.hash('sha256', key, 'hex')
}

/** 256 random bits; the secret is returned here once and never stored. Defaults: every scope, no expiry. */
export async function createApiKey (
  store: Store,
  name: string,
  opts: { scopes?: readonly Scope[], expiresAt?: Date | null } = {},
  now = new Date()
): Promise<{ key: string, record: ApiKeyRecord }> {
  const key = API_KEY_PREFIX + crypto.randomBytes(32).toString('base64url')
  const record = await store.createApiKey({ name, hash: hashApiKey(key), createdAt: now, scopes: opts.scopes, expiresAt: opts.expiresAt })
  return { key, record }
}

/** A revocation set for later is scheduled (the key works until then); a key both revoked and expired is revoked. */
export type KeyState = 'active' | 'expired' | 'revoked'
export function keyState (key: Pick<ApiKeyGrant, 'expiresAt' | 'revokedAt'>, now: number): KeyState {
  if ((key.revokedAt?.getTime() ?? Infinity) <= now) return 'revoked'
  if ((key.expiresAt?.getTime() ?? Infinity) <= now) return 'expired'
  return 'active'
}

const toGrant = (found: ApiKeyGrant) => ({ ...found, scopes: new Set(found.scopes), all: ALL_SCOPES.every(s => found.scopes.includes(s)) })
export type KeyGrant = ReturnType<typeof toGrant>

export type KeyRefusal = 'unknown' | 'revoked' | 'expired'
export type KeyVerdict = KeyGrant | KeyRefusal

function verdictAt (grant: KeyGrant | undefined, now: number): KeyVerdict {
  if (grant === undefined) return 'unknown'
  const state = keyState(grant, now)
  return state === 'active' ? grant : state
}

/** `scope()` is asked only of a key without every scope. */
export function missingScope (grant: KeyGrant, scope: () => Scope | undefined): Scope | undefined {
  if (grant.all) return undefined
  const needed = scope()
  return needed === undefined || grant.scopes.has(needed) ? undefined : needed
}

interface CacheEntry { grant: KeyGrant | undefined, expires: number }

const KNOWN_VALID_MS = 24 * 3600000
/** The most keys each of the caches below holds. */
const MAX_ENTRIES = 10000

/**
 * Trusts what the store said of a key for at most `ttlMs`, so a revocation made elsewhere (another
 * instance, the CLI) holds within that bound; known expiry and revocation times hold to the
 * millisecond. Concurrent checks of one key share one lookup; last use is flushed in the background.
 */
export class ApiKeyVerifier {
  // Keyed by the key as sent (a hit needs no hashing); it stays in this process's memory only. fetch()
  // runs one lookup per key for every check waiting on it, finished even if the entry is evicted meanwhile.
  private readonly cache = new LRUCache<string, CacheEntry>({ max: MAX_ENTRIES, ignoreFetchAbort: true, fetchMethod: async (key) => await this.lookup(key) })
  /** By hash: until when a key that verified here is known valid; least recently verified go first. */
  private readonly valid = new LRUCache<string, number>({ max: MAX_ENTRIES })
  private usedAt = new Map<number, number>()
  private readonly timer = setInterval(() => { void this.flushLastUsed() }, 5000).unref()

  constructor (
    private readonly store: Store,
    private readonly ttlMs: number,
    private readonly now: Clock
  ) {}

  /**
   * From memory only. Not an authentication: it lets a key that verified here past its address's
   * failed-attempt block (rate-limit.ts), then it is verified as usual. Passing it takes guessing a valid key.
   */
  knownValid (key: string): boolean {
    const now = this.now()
    // Asked on every request: a key the cache holds as valid is answered without hashing it (a SHA-256
    // per request is about a tenth of a cached read's server CPU).
    if (typeof verdictAt(this.fresh(key, now)?.grant, now) !== 'string') return true
    if (!API_KEY_PATTERN.test(key)) return false
    const until = this.valid.peek(hashApiKey(key))
    return until !== undefined && until > now
  }

  async verify (key: string): Promise<KeyVerdict> {
    const now = this.now()
    const hit = this.fresh(key, now)
    let grant = hit?.grant
    if (hit === undefined) {
      if (!API_KEY_PATTERN.test(key)) return 'unknown'
      grant = (await this.cache.fetch(key, { forceRefresh: true }))!.grant
    }
    const verdict = verdictAt(grant, now)
    if (typeof verdict !== 'string') this.usedAt.set(verdict.id, now)
    return verdict
  }

  private fresh (key: string, now: number): CacheEntry | undefined {
    const hit = this.cache.get(key)
    return hit !== undefined && hit.expires > now ? hit : undefined
  }

  private async lookup (key: string): Promise<CacheEntry> {
    const hash = hashApiKey(key)
    const found = await this.store.findApiKeyByHash(hash)
    const grant = found === undefined ? undefined : toGrant(found)
    const now = this.now()
    if (typeof verdictAt(grant, now) === 'string') this.valid.delete(hash)
    else this.valid.set(hash, now + KNOWN_VALID_MS)
    return { grant, expires: now + this.ttlMs }
  }

  async flushLastUsed (): Promise<void> {
    if (this.usedAt.size === 0) return
    const batch = this.usedAt
    this.usedAt = new Map()
    try {
      await this.store.touchApiKeys(new Map([...batch].map(([id, at]) => [id, new Date(at)])))
    } catch {
      // Last-used is advisory: retried with the next flush.
      for (const [id, at] of batch) if (!this.usedAt.has(id)) this.usedAt.set(id, at)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.timer)
    await this.flushLastUsed()
  }
}
