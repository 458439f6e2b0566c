import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises'

/**
 * Items submitted while a batch commits go together in the next, so one flush acknowledges many
 * writes. Each submitter's promise settles after its own batch committed or failed.
 */
export interface GroupCommitOptions {
  maxBatch?: number
  /**
   * Least ms between batch starts, for a store whose every batch costs a flush: one flush then
   * carries what arrived meanwhile. A lone write still starts at once.
   */
  minIntervalMs?: number
  /** This many waiting items start a batch without waiting out the interval. */
  fullBatch?: number
}

export class GroupCommit<In, Out> {
  private queue: Array<{ item: In, resolve: (v: Out) => void, reject: (e: unknown) => void }> = []
  /** From the first submit of a batch until the queue is empty. */
  private flushing: Promise<void> | undefined
  private lastStart = -Infinity
  private waiting: AbortController | undefined
  private readonly opts: Required<GroupCommitOptions>

  constructor (private readonly commit: (items: In[]) => Promise<Out[]>, options: GroupCommitOptions = {}) {
    this.opts = { maxBatch: 1000, minIntervalMs: 0, fullBatch: Infinity, ...options }
  }

  submit (item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      if (this.queue.length >= this.opts.fullBatch) this.waiting?.abort()
      // Let every request that arrived in this turn of the event loop join the batch.
      this.flushing ??= nextTurn().then(async () => { await this.flush() })
    })
  }

  /** Resolves once every submitted item has settled. */
  async drain (): Promise<void> {
    while (this.flushing !== undefined) await this.flushing
  }

  private async flush (): Promise<void> {
    while (this.queue.length > 0) {
      const wait = this.lastStart + this.opts.minIntervalMs - performance.now()
      if (wait > 0 && this.queue.length < this.opts.fullBatch) {
        this.waiting = new AbortController()
        // Aborted (a full batch waits): the batch starts at once.
        await sleep(Math.ceil(wait), undefined, { signal: this.waiting.signal }).catch(() => {})
        this.waiting = undefined
      }
      this.lastStart = performance.now()
      const batch = this.queue.splice(0, this.opts.maxBatch)
      try {
        const results = await this.commit(batch.map(b => b.item))
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(results[i]!)
      } catch (err) {
        for (const b of batch) b.reject(err)
      }
    }
    this.flushing = undefined
  }
}
