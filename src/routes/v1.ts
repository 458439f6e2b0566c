import { randomBytes } from 'node:crypto'
import type { FastifyInstance, RouteOptions } from 'fastify'
import type { Config } from '../config/index.js'
import { StoreOpeningError } from '../errors.js'
import { ReadCache } from '../http/representations.js'
import idempotencyPurge from '../services/idempotency-purge.js'
import { ALL_SCOPES, isScope, type Scope } from '../schemas/scopes.js'
import { CursorCodec } from '../services/cursor.js'
import type { Clock } from '../runtime/clock.js'
import type { Store } from '../store/store.js'
import orderRoutes from './orders.js'
import petRoutes from './pets.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope an API key needs for this route. */
    scope?: Scope
  }
}

// Every /v1 route declares its scope and lists its 403, and its OpenAPI security requirement is written
// from that one declaration: a route without them fails the start, not a request.
function requireScope (route: RouteOptions): void {
  const where = `${String(route.method)} ${route.url}`
  const scope = route.config?.scope
  if (scope === undefined || !isScope(scope)) throw new Error(`route ${where} must declare the scope a key needs in config.scope (one of ${ALL_SCOPES.join(', ')})`)
  const schema = route.schema ?? {}
  if ((schema.response as Record<string, unknown> | undefined)?.[403] === undefined) {
    throw new Error(`route ${where} needs scope ${scope}: its responses must list insufficient_scope (AUTHORIZATION_CODES)`)
  }
  route.schema = { ...schema, security: [{ bearerAuth: [scope] }] }
}

export interface V1Options {
  config: Readonly<Config>
  store: Store
  now: Clock
}

// This scope's onRequest hooks run for its routes, its unknown paths and wrong methods (404/405), and
// its undecodable URLs alike: first 503 while a start's store is still being checked
// (plugins/store-opening.ts), then the authentication policy (plugins/auth.ts).
export default async function v1Routes (app: FastifyInstance, opts: V1Options): Promise<void> {
  const { config, store, now } = opts
  app.addHook('onRequest', (_request, _reply, done) => {
    done(app.storeOpening ? new StoreOpeningError() : undefined)
  })
  app.addHook('onRequest', app.authenticate)
  app.addHook('onRoute', requireScope)

  // The cursor key lives in the store, so every instance accepts every other instance's cursors. Read
  // once the store is open: until then no /v1 request is let through (plugins/store-opening.ts).
  const cursors = new CursorCodec()
  await app.whenStoreOpen(async () => {
    cursors.useSecret(Buffer.from(await store.getOrCreateSetting('cursor_hmac_key', () => randomBytes(32).toString('hex')), 'hex'))
  })
  await app.register(petRoutes, {
    store,
    cache: new ReadCache(config.readCacheMaxBytes, app.metrics),
    cursors,
    now,
    idempotencyTtlMs: config.idempotencyTtlMs
  })
  await app.register(idempotencyPurge, { store, ttlMs: config.idempotencyTtlMs, now })
  await app.register(orderRoutes)
  app.setNotFoundHandler(app.notFoundHandler)
}
