import crypto, { createHash, randomBytes } from 'node:crypto'
import type { Scope } from '../schemas/scopes.js'
import type { ApiKeyGrant, ApiKeyRecord, Store } from '../store/store.js'

/** Prefix of every key, so secret scanners can recognise a leaked one. */
export const API_KEY_PREFIX = 'psk_'
const API_KEY_PATTERN = /^psk_[A-Za-z0-9_-]{43}$/

/** SHA-256 (hex) of a key: the only form in which a key is stored. */
export function hashApiKey (key: string): string {
  return oneShotHash !== undefined ? oneShotHash('sha256', key, 'hex') : createHash('sha256').update(key).digest('hex')
}
// crypto.hash (Node ≥ 20.12) skips the Hash object: measurably cheaper on every authenticated request.
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash

/**
 * Creates a key with 256 random bits; the secret is returned here once and never stored. Without
 * `scopes` it holds every scope; without `expiresAt` it never expires.
 */
export async function createApiKey (
  store: Store,
  name: string,
  opts: { scopes?: readonly Scope[], expiresAt?: Date | null } = {},
  now = new Date()
): Promise<{ key: string, record: ApiKeyRecord }> {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url')
  const record = await store.createApiKey({ name, hash: hashApiKey(key), createdAt: now, scopes: opts.scopes, expiresAt: opts.expiresAt })
  return { key, record }
}

/**
 * Whether a key works at `now` (ms): revoked from its revocation time on (a revocation set for later
 * is scheduled: the key works until then), expired from its expiry on, active otherwise. A key both
 * revoked and expired is revoked: that was decided about it.
 */
export type KeyState = 'active' | 'expired' | 'revoked'
export function keyState (key: Pick<ApiKeyGrant, 'expiresAt' | 'revokedAt'>, now: number): KeyState {
  if (key.revokedAt !== null && key.revokedAt.getTime() <= now) return 'revoked'
  if (key.expiresAt !== null && key.expiresAt.getTime() <= now) return 'expired'
  return 'active'
}

interface CacheEntry { id: number | undefined, expires: number }

/** How long a key stays "known valid" after it last verified (see knownValid). */
const KNOWN_VALID_MS = 24 * 3600000

/**
 * Verifies bearer keys against the store, trusting an answer for at most `ttlMs`, so a revocation
 * made anywhere (another instance, the CLI) is honoured within that bound. Concurrent checks of one
 * key share a single store lookup. Also records last use, flushed to the store in the background.
 */
export class ApiKeyVerifier {
  private readonly cache = new Map<string, CacheEntry>()
  private readonly inFlight = new Map<string, Promise<number | undefined>>()
  /** Hashes of keys that verified valid, and until when that is remembered. */
  private readonly valid = new Map<string, number>()
  private usedAt = new Map<number, number>()
  private readonly timer: NodeJS.Timeout

  constructor (
    private readonly store: Store,
    private readonly ttlMs: number,
    private readonly flushEveryMs = 5000,
    private readonly maxEntries = 10000
  ) {
    this.timer = setInterval(() => { void this.flushLastUsed() }, flushEveryMs)
    this.timer.unref()
  }

  /**
   * Whether this key verified valid here within the last 24 h, answered from memory alone (never the
   * store). Not an authentication: it only lets a known key past its address's failed-attempt block
   * (rate-limit.ts), after which the key is verified as usual (a revocation still answers 401 and
   * drops it from this memory). Guessing a key that passes costs as much as guessing a valid key.
   */
  knownValid (key: string): boolean {
    if (!API_KEY_PATTERN.test(key)) return false
    const until = this.valid.get(hashApiKey(key))
    return until !== undefined && until > Date.now()
  }

  private rememberValid (hash: string, valid: boolean): void {
    if (!valid) {
      this.valid.delete(hash)
      return
    }
    // Re-inserted so the Map's order is least recently verified first: the first entry goes when full.
    this.valid.delete(hash)
    if (this.valid.size >= this.maxEntries) this.valid.delete(this.valid.keys().next().value!)
    this.valid.set(hash, Date.now() + KNOWN_VALID_MS)
  }

  /** The key's id when the key is valid and not revoked; undefined otherwise. */
  async verify (key: string): Promise<number | undefined> {
    return await this.check(key)
  }

  /**
   * Same answer as verify(), but synchronous while the answer is cached (nearly every request), so
   * the auth hook costs no promise; a Promise only when the store must be asked.
   */
  check (key: string): number | undefined | Promise<number | undefined> {
    const now = Date.now()
    const hit = this.fresh(key, now)
    if (hit !== undefined) {
      if (hit.id !== undefined) this.used(hit.id, now)
      return hit.id
    }
    if (!API_KEY_PATTERN.test(key)) return undefined
    let lookup = this.inFlight.get(key)
    if (lookup === undefined) {
      lookup = this.lookup(key)
      this.inFlight.set(key, lookup)
    }
    return lookup.then(id => {
      if (id !== undefined) this.usedAt.set(id, now)
      return id
    })
  }

  /**
   * The key's id when the cache trusts it as valid now, with no side effect (undefined: invalid,
   * revoked, not cached or expired; check() then decides, and used() records a use).
   */
  trusted (key: string, now: number): number | undefined {
    return this.fresh(key, now)?.id
  }

  /**
   * The cached answer for this key while it is trusted. Keyed by the key as sent, so a hit costs one
   * Map lookup and no hashing; the key is only held in this process's memory (the store keeps
   * hashes), and an entry is trusted for at most ttlMs.
   */
  private fresh (key: string, now: number): CacheEntry | undefined {
    const hit = this.cache.get(key)
    return hit !== undefined && hit.expires > now ? hit : undefined
  }

  /** Records a use of the key at `now` (flushed to the store as its last use). */
  used (id: number, now: number): void {
    this.usedAt.set(id, now)
  }

  private async lookup (key: string): Promise<number | undefined> {
    try {
      const hash = hashApiKey(key)
      const found = await this.store.findApiKeyByHash(hash)
      const id = found === undefined || keyState(found, Date.now()) !== 'active' ? undefined : found.id
      this.rememberValid(hash, id !== undefined)
      if (this.cache.size >= this.maxEntries) this.cache.clear()
      this.cache.set(key, { id, expires: Date.now() + this.ttlMs })
      return id
    } finally {
      this.inFlight.delete(key)
    }
  }

  /** Writes the last-used times gathered since the previous flush. */
  async flushLastUsed (): Promise<void> {
    if (this.usedAt.size === 0) return
    const batch = this.usedAt
    this.usedAt = new Map()
    try {
      await this.store.touchApiKeys(new Map([...batch].map(([id, at]) => [id, new Date(at)])))
    } catch {
      // Last-used is advisory: a failed flush is retried with the next one.
      for (const [id, at] of batch) if (!this.usedAt.has(id)) this.usedAt.set(id, at)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.timer)
    await this.flushLastUsed()
  }
}
