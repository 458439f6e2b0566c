import type { FastifyInstance } from 'fastify'
import type { Clock } from '../runtime/clock.js'
import type { Store } from '../store/store.js'

export interface IdempotencyPurgeOptions {
  store: Pick<Store, 'purgeIdempotencyKeys'>
  ttlMs: number
  now: Clock
}

/** Expired records are already ignored by the store: this only keeps the table small. */
export default async function idempotencyPurge (app: FastifyInstance, opts: IdempotencyPurgeOptions): Promise<void> {
  const timer = setInterval(() => {
    opts.store.purgeIdempotencyKeys(new Date(opts.now() - opts.ttlMs))
      .catch((err: unknown) => app.log.warn({ err }, 'purging expired idempotency keys failed'))
  }, 3600000).unref()
  app.addHook('onClose', async () => { clearInterval(timer) })
}
