/**
 * Group commit: items submitted while a batch is being committed wait and go together in the next
 * batch, so one flush acknowledges many writes. At most one batch is in flight; each submitter's
 * promise settles only after its own batch has committed (or failed, with the batch's error).
 */
export interface GroupCommitOptions {
  /** The most items in one batch. */
  maxBatch?: number
  /**
   * The least time between the starts of two batches, in ms (0: none). A store whose every batch
   * costs a flush sets it, so that under a steady stream of writes one flush carries what arrived
   * over that time instead of the few that arrived during the previous flush. A batch still starts
   * at once when the previous one started longer ago (a lone write waits for nothing) or as soon as
   * `fullBatch` items are waiting.
   */
  minIntervalMs?: number
  /** With minIntervalMs: this many waiting items start a batch without waiting out the interval. */
  fullBatch?: number
}

export class GroupCommit<In, Out> {
  private queue: Array<{ item: In, resolve: (v: Out) => void, reject: (e: unknown) => void }> = []
  private inFlight = false
  private lastStart = -Infinity
  /** Ends the wait for the interval early (fullBatch items are waiting). */
  private endWait: (() => void) | undefined
  private readonly maxBatch: number
  private readonly minIntervalMs: number
  private readonly fullBatch: number

  constructor (
    private readonly commit: (items: In[]) => Promise<Out[]>,
    { maxBatch = 1000, minIntervalMs = 0, fullBatch = Infinity }: GroupCommitOptions = {}
  ) {
    this.maxBatch = maxBatch
    this.minIntervalMs = minIntervalMs
    this.fullBatch = fullBatch
  }

  submit (item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      if (this.queue.length >= this.fullBatch) this.endWait?.()
      if (!this.inFlight) {
        this.inFlight = true
        // Let every request that arrived in this turn of the event loop join the batch.
        setImmediate(() => { void this.flush() })
      }
    })
  }

  /** Resolves once nothing is queued or in flight. */
  async drain (): Promise<void> {
    while (this.inFlight || this.queue.length > 0) {
      await new Promise(resolve => setImmediate(resolve))
    }
  }

  private async flush (): Promise<void> {
    while (this.queue.length > 0) {
      const wait = this.lastStart + this.minIntervalMs - performance.now()
      if (wait > 0 && this.queue.length < this.fullBatch) {
        await new Promise<void>(resolve => {
          // Timers count whole milliseconds: rounded up, so the wait is never shorter than the interval's rest.
          const timer = setTimeout(() => { this.endWait?.() }, Math.ceil(wait))
          this.endWait = () => {
            clearTimeout(timer)
            this.endWait = undefined
            resolve()
          }
        })
      }
      this.lastStart = performance.now()
      const batch = this.queue.splice(0, this.maxBatch)
      try {
        const results = await this.commit(batch.map(b => b.item))
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!)
      } catch (err) {
        for (const b of batch) b.reject(err)
      }
    }
    this.inFlight = false
  }
}
