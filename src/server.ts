// First: refuses an unsupported Node before better-sqlite3 is loaded.
import './runtime/node-version.js'
// Second: caches compiled code for the modules loaded after it.
import './runtime/compile-cache.js'
import { realpathSync } from 'node:fs'
import type { StoreOptions } from './store/index.js'

/*
 * The process entry (`npm start`, `petstore serve`): small on purpose. The service itself
 * (start-server.ts; in the production build one bundle with Fastify, pino and their dependencies) is
 * loaded by import() after the two imports above have run. A static import would be compiled with
 * this file, before the compile cache is on, and so would never be read from it.
 */

/** Loads the service's code (and with it every package a start needs) without starting it. */
export async function loadService (): Promise<typeof import('./start-server.js')> {
  return await import('./start-server.js')
}

/**
 * config → store → app → listen, with graceful shutdown (start-server.ts). `storeOptions` are what
 * benchmarks and tests change that users do not (a process started with `node -e` passes them).
 */
export async function startServer (env: NodeJS.ProcessEnv = process.env, storeOptions: StoreOptions = {}): Promise<void> {
  await (await loadService()).startServer(env, storeOptions)
}

function isEntry (): boolean {
  const argv1 = process.argv[1]
  if (argv1 === undefined) return false
  try {
    return import.meta.filename === realpathSync(argv1)
  } catch {
    return false
  }
}

if (isEntry()) await startServer()
