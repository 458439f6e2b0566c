/** One window's count: requests so far, and milliseconds until the window ends. */
export interface WindowCount { current: number, ttl: number }

interface Window { current: number, start: number }

/**
 * Fixed-window counters in process memory, the same rule as @fastify/rate-limit's LocalStore (a
 * key's window starts with its first request and lasts `windowMs`; a later request past it starts a
 * new one), answered synchronously. Written here rather than taken from the library because the
 * library's check costs a chain of promises per request (its key generator, store callback and
 * result are each awaited), measured at about a sixth of a cached read's CPU (docs/performance.md);
 * the library still counts in Redis, where the network round trip dominates.
 *
 * Bounded: past `maxKeys` windows, the ended ones are dropped, then the oldest (a dropped key starts
 * a fresh window, as an entry evicted from the library's LRU does).
 */
export class MemoryWindows {
  private readonly windows = new Map<string, Window>()

  constructor (private readonly windowMs: number, private readonly maxKeys = 10000) {}

  /** Counts one request of `key` now. */
  hit (key: string, now = Date.now()): WindowCount {
    let w = this.windows.get(key)
    if (w === undefined) {
      if (this.windows.size >= this.maxKeys) this.evict(now)
      w = { current: 0, start: now }
      this.windows.set(key, w)
    } else if (w.start + this.windowMs <= now) {
      w.current = 0
      w.start = now
    }
    w.current++
    return { current: w.current, ttl: this.windowMs - (now - w.start) }
  }

  get size (): number {
    return this.windows.size
  }

  private evict (now: number): void {
    for (const [key, w] of this.windows) if (w.start + this.windowMs <= now) this.windows.delete(key)
    // Map order is insertion order: the first key is the one counted first, longest ago.
    if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
  }
}
