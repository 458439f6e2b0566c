export interface WindowCount { current: number, ttl: number }

interface Window { current: number, start: number }

// Fixed windows in memory, by the rule of @fastify/rate-limit's LocalStore: a key's window starts with
// its first request and lasts windowMs. Past maxKeys, ended windows go, then the window started first.
// The library's in-memory store is not used (it still counts in Redis, where the round trip dominates):
// - it reads Date.now(); these windows take the time from the caller, the app's clock (runtime/clock.ts);
// - it is reached through app.createRateLimit, a chain of promises per check; hit() and peek() answer
//   at once, so the trusted-key path of auth.ts decides a request without a promise.
// Cost: a count takes 56 ns here, 770 ns through createRateLimit (63 and 680 ns over 1,000 keys), by
// `node bench/ab-rate-store.mjs 15 200000 1` (and `… 1000`): interleaved rounds, medians. A cached
// getPet takes 7% more server CPU with the library's store in place of this file, the trusted-key path
// kept but counting through createRateLimit: bench/ab-tracing.mjs with AB_SIDES naming a build of each,
// rounds of 5 s, median of per-round ratios 0.93 over 8 rounds and over 10 (single rounds vary by 10%).
export class MemoryWindows {
  private readonly windows = new Map<string, Window>()

  constructor (private readonly windowMs: number, private readonly maxKeys = 10000) {}

  hit (key: string, now: number): WindowCount {
    let w = this.windows.get(key)
    if (w === undefined) {
      if (this.windows.size >= this.maxKeys) this.evict(now)
      w = { current: 0, start: now }
      this.windows.set(key, w)
    } else if (w.start + this.windowMs <= now) {
      this.windows.delete(key)
      w = { current: 0, start: now }
      this.windows.set(key, w)
    }
    w.current++
    return { current: w.current, ttl: this.windowMs - (now - w.start) }
  }

  peek (key: string, now: number): WindowCount {
    const w = this.windows.get(key)
    if (w === undefined || w.start + this.windowMs <= now) return { current: 1, ttl: this.windowMs }
    return { current: w.current + 1, ttl: this.windowMs - (now - w.start) }
  }

  get size (): number {
    return this.windows.size
  }

  private evict (now: number): void {
    // Map order is window start order (a new window re-inserts its key): ended windows are at the front.
    for (const [key, w] of this.windows) {
      if (w.start + this.windowMs > now) break
      this.windows.delete(key)
    }
    if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
  }
}
