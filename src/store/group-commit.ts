/**
 * Group commit: items submitted while a batch is being committed wait and go together in the next
 * batch, so one fsync acknowledges many writes. At most one batch is in flight; each submitter's
 * promise settles only after its own batch has committed (or failed, with the batch's error).
 */
export class GroupCommit<In, Out> {
  private queue: Array<{ item: In, resolve: (v: Out) => void, reject: (e: unknown) => void }> = []
  private inFlight = false

  constructor (
    private readonly commit: (items: In[]) => Promise<Out[]>,
    private readonly maxBatch = 1000
  ) {}

  submit (item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
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
