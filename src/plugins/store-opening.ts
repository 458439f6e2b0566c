import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { isOpening, type Store } from '../store/store.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * True while the store a start serves with is still being checked and migrated (SQLite,
     * store/sqlite/opening.ts), and then while the tasks given to whenStoreOpen run: /readyz and
     * every /v1 request answer 503.
     */
    readonly storeOpening: boolean
    /**
     * Runs `task` once the store is open: at once (and waits for it) when it already is, else after
     * it opened, before storeOpening turns false. For what a plugin reads from the store at start.
     */
    whenStoreOpen: (task: () => Promise<void>) => Promise<void>
    /** Once the app is ready: resolves when storeOpening is false; rejects with why the store cannot be served (or a task failed). */
    storeOpened: () => Promise<void>
  }
}

/**
 * The window of a start in which the server listens but its store is not open yet: /healthz
 * answers (the process is alive), /readyz and /v1 answer 503 service_unavailable with Retry-After,
 * the documents and the root are served. A store that is open when the app is built has no window.
 */
async function storeOpening (app: FastifyInstance, { store }: { store: Store }): Promise<void> {
  let opening = isOpening(store)
  const tasks: Array<() => Promise<void>> = []
  let opened: Promise<void> = Promise.resolve()
  app.decorate('storeOpening', { getter: () => opening })
  app.decorate('whenStoreOpen', async (task: () => Promise<void>) => {
    if (opening) tasks.push(task)
    else await task()
  })
  app.decorate('storeOpened', async () => { await opened })
  if (!isOpening(store)) return
  // Once every plugin has given its tasks (onReady: before the server listens, without waiting for the store).
  app.addHook('onReady', (done) => {
    opened = store.opened.then(async () => {
      for (const task of tasks) await task()
      opening = false
    })
    opened.catch(() => {}) // the start waits for it; nothing else may
    done()
  })
}

export default fp(storeOpening, { name: 'petstore-store-opening' })
