/** One window's count: requests so far, and milliseconds until the window ends. */
export interface WindowCount { current: number, ttl: number }

interface Window { current: number, start: number }

/**
 * Fixed-window counters in process memory, the same rule as @fastify/rate-limit's LocalStore (a
 * key's window starts with its first request and lasts `windowMs`; a later request past it starts a
 * new one), answered synchronously. Written here rather than taken from the library because the
 * library's check costs a chain of promises per request (its key generator, store callback and
 * result are each awaited), a large share of a cached read's CPU; the library still counts in Redis,
 * where the network round trip dominates.
 *
 * Bounded: past `maxKeys` windows, the ended ones are dropped, then the one that started longest ago
 * (a dropped key starts a fresh window, as an entry evicted from the library's LRU does).
 */
export class MemoryWindows {
  private readonly windows = new Map<string, Window>()

  constructor (private readonly windowMs: number, private readonly maxKeys = 10000) {}

  /** Counts one request of `key` at `now` (ms, the app's clock). */
  hit (key: string, now: number): WindowCount {
    let w = this.windows.get(key)
    if (w === undefined) {
      if (this.windows.size >= this.maxKeys) this.evict(now)
      w = { current: 0, start: now }
      this.windows.set(key, w)
    } else if (w.start + this.windowMs <= now) {
      // A new window moves the key to the end of the Map, so Map order stays the order of window
      // starts: ended windows are always at the front, and eviction never scans live ones.
      this.windows.delete(key)
      w = { current: 0, start: now }
      this.windows.set(key, w)
    }
    w.current++
    return { current: w.current, ttl: this.windowMs - (now - w.start) }
  }

  /** What hit(key, now) would count, without counting it (a limit is checked before anything is counted). */
  peek (key: string, now: number): WindowCount {
    const w = this.windows.get(key)
    if (w === undefined || w.start + this.windowMs <= now) return { current: 1, ttl: this.windowMs }
    return { current: w.current + 1, ttl: this.windowMs - (now - w.start) }
  }

  get size (): number {
    return this.windows.size
  }

  private evict (now: number): void {
    // From the front (oldest window start) while windows have ended: each ended window is visited
    // once, so a stream of new addresses costs O(1) each, not a scan of every live window.
    for (const [key, w] of this.windows) {
      if (w.start + this.windowMs > now) break
      this.windows.delete(key)
    }
    // Still full of live windows: drop the one that started longest ago.
    if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
  }
}
