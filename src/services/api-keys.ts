import crypto, { createHash, randomBytes } from 'node:crypto'
import { ALL_SCOPES, type Scope } from '../schemas/scopes.js'
import type { Clock } from '../runtime/clock.js'
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
  return stateAt(key.expiresAt?.getTime() ?? Infinity, key.revokedAt?.getTime() ?? Infinity, now)
}

function stateAt (expiresAt: number, revokedAt: number, now: number): KeyState {
  if (revokedAt <= now) return 'revoked'
  if (expiresAt <= now) return 'expired'
  return 'active'
}

/** A key as the verifier holds it: who, what it may do, and from when (ms; Infinity: never) it stops working. */
export interface KeyGrant {
  readonly id: number
  readonly scopes: ReadonlySet<Scope>
  /** Holds every scope: no route needs to be asked which one it wants. */
  readonly all: boolean
  readonly expiresAt: number
  readonly revokedAt: number
}

/** Why a key is refused: not a key issued here (or not even shaped like one), revoked, or expired. */
export type KeyRefusal = 'unknown' | 'revoked' | 'expired'
export type KeyVerdict = KeyGrant | KeyRefusal

function toGrant (found: ApiKeyGrant): KeyGrant {
  return {
    id: found.id,
    scopes: new Set(found.scopes),
    all: ALL_SCOPES.every(s => found.scopes.includes(s)),
    expiresAt: found.expiresAt?.getTime() ?? Infinity,
    revokedAt: found.revokedAt?.getTime() ?? Infinity
  }
}

/** The verdict on a key at `now`: its grant while it works, else why not. Times are compared on every use, so expiry and a scheduled revocation hold to the millisecond. */
function verdictAt (grant: KeyGrant | undefined, now: number): KeyVerdict {
  if (grant === undefined) return 'unknown'
  const state = stateAt(grant.expiresAt, grant.revokedAt, now)
  return state === 'active' ? grant : state
}

/**
 * The scope a route needs that the key lacks, or undefined when the key may use it. `scope()` names
 * what the route needs (undefined: nothing, as an unknown path); it is asked only when the key does
 * not hold every scope.
 */
export function missingScope (grant: KeyGrant, scope: () => Scope | undefined): Scope | undefined {
  if (grant.all) return undefined
  const needed = scope()
  return needed === undefined || grant.scopes.has(needed) ? undefined : needed
}

interface CacheEntry { grant: KeyGrant | undefined, expires: number }

/** How long a key stays "known valid" after it last verified (see knownValid). */
const KNOWN_VALID_MS = 24 * 3600000

/**
 * Verifies bearer keys against the store, trusting what the store said of a key (its scopes, expiry
 * and revocation time) for at most `ttlMs`, so a revocation made anywhere (another instance, the
 * CLI) is honoured within that bound; an expiry or revocation time already known is honoured to the
 * millisecond. Concurrent checks of one key share a single store lookup. Also records last use,
 * flushed to the store in the background.
 */
export class ApiKeyVerifier {
  private readonly cache = new Map<string, CacheEntry>()
  private readonly inFlight = new Map<string, Promise<KeyGrant | undefined>>()
  /** Hashes of keys that verified valid, and until when that is remembered. */
  private readonly valid = new Map<string, number>()
  private usedAt = new Map<number, number>()
  private readonly timer: NodeJS.Timeout

  constructor (
    private readonly store: Store,
    private readonly ttlMs: number,
    /** The clock expiry, revocation and the cache's trust are judged by. */
    private readonly now: Clock,
    private readonly flushEveryMs = 5000,
    private readonly maxEntries = 10000
  ) {
    this.timer = setInterval(() => { void this.flushLastUsed() }, flushEveryMs)
    this.timer.unref()
  }

  /**
   * Whether this key verified valid here within the last 24 h, answered from memory alone (never the
   * store). Not an authentication: it only lets a known key past its address's failed-attempt block
   * (rate-limit.ts), after which the key is verified as usual (a revocation or expiry still answers
   * 401 and drops it from this memory). Guessing a key that passes costs as much as guessing a valid key.
   */
  knownValid (key: string): boolean {
    if (!API_KEY_PATTERN.test(key)) return false
    const until = this.valid.get(hashApiKey(key))
    return until !== undefined && until > this.now()
  }

  private rememberValid (hash: string, valid: boolean): void {
    if (!valid) {
      this.valid.delete(hash)
      return
    }
    // Re-inserted so the Map's order is least recently verified first: the first entry goes when full.
    this.valid.delete(hash)
    if (this.valid.size >= this.maxEntries) this.valid.delete(this.valid.keys().next().value!)
    this.valid.set(hash, this.now() + KNOWN_VALID_MS)
  }

  /** The key's grant when it works now; why not otherwise. */
  async verify (key: string): Promise<KeyVerdict> {
    return await this.check(key)
  }

  /**
   * Same answer as verify(), but synchronous while the answer is cached (nearly every request), so
   * the auth hook costs no promise; a Promise only when the store must be asked. A use is recorded
   * when the key works.
   */
  check (key: string): KeyVerdict | Promise<KeyVerdict> {
    const now = this.now()
    const hit = this.fresh(key, now)
    if (hit !== undefined) {
      const verdict = verdictAt(hit.grant, now)
      if (typeof verdict !== 'string') this.used(verdict.id, now)
      return verdict
    }
    if (!API_KEY_PATTERN.test(key)) return 'unknown'
    let lookup = this.inFlight.get(key)
    if (lookup === undefined) {
      lookup = this.lookup(key)
      this.inFlight.set(key, lookup)
    }
    return lookup.then(grant => {
      const verdict = verdictAt(grant, now)
      if (typeof verdict !== 'string') this.usedAt.set(verdict.id, now)
      return verdict
    })
  }

  /**
   * The key's grant when the cache trusts it and it works now, with no side effect (undefined:
   * refused, not cached, or no longer trusted; check() then decides, and used() records a use).
   */
  trusted (key: string, now: number): KeyGrant | undefined {
    const verdict = verdictAt(this.fresh(key, now)?.grant, now)
    return typeof verdict === 'string' ? undefined : verdict
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

  /** What the store holds of the key (undefined: no such key), cached for ttlMs. */
  private async lookup (key: string): Promise<KeyGrant | undefined> {
    try {
      const hash = hashApiKey(key)
      const found = await this.store.findApiKeyByHash(hash)
      const grant = found === undefined ? undefined : toGrant(found)
      const now = this.now()
      this.rememberValid(hash, typeof verdictAt(grant, now) !== 'string')
      if (this.cache.size >= this.maxEntries) this.cache.clear()
      this.cache.set(key, { grant, expires: now + this.ttlMs })
      return grant
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
