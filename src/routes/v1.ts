import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'
import idempotencyPurge from '../plugins/idempotency-purge.js'
import { CursorCodec } from '../services/cursor.js'
import { PetReads } from '../services/pet-reads.js'
import type { Store } from '../store/store.js'
import orderRoutes from './orders.js'
import petRoutes from './pets.js'

export interface V1Options {
  config: Readonly<Config>
  store: Store
  /** The clock (ms since epoch), injectable so tests can cross the getPet sunset. */
  now: () => number
}

/**
 * The /v1 scope (registered with that prefix): every route of the Petstore v1 interface, behind the
 * authentication policy (plugins/auth.ts), which is this scope's first onRequest hook and so runs
 * for its routes, its unknown paths and wrong methods (404/405), and its undecodable URLs alike.
 */
export default async function v1Routes (app: FastifyInstance, opts: V1Options): Promise<void> {
  const { config, store, now } = opts
  app.addHook('onRequest', app.authenticate)

  // The cursor key lives in the store, so every instance accepts every other instance's cursors.
  const cursorSecret = await store.getOrCreateSetting('cursor_hmac_key', () => randomBytes(32).toString('hex'))
  await app.register(petRoutes, {
    store,
    reads: new PetReads(store, config.readCacheMaxBytes, app.metrics),
    cursors: new CursorCodec(Buffer.from(cursorSecret, 'hex')),
    getPetDeprecatedAt: config.getPetDeprecatedAt,
    getPetSunsetAt: config.getPetSunsetAt,
    now,
    metrics: app.metrics,
    idempotencyTtlMs: config.idempotencyTtlMs
  })
  await app.register(idempotencyPurge, { store, ttlMs: config.idempotencyTtlMs, now })
  await app.register(orderRoutes)
  app.setNotFoundHandler(app.notFoundHandler)
}
