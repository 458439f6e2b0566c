export interface WindowCount { current: number, ttl: number }

interface Window { current: number, start: number }

// Fixed windows in memory by @fastify/rate-limit's LocalStore rule, answered synchronously: the
// library awaits a chain of promises per check, a large share of a cached read's CPU (it still counts
// in Redis, where the round trip dominates). Past maxKeys, ended windows go, then the oldest.
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
