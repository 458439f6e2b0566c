import type { Config } from '../config/index.js'
import type { startSdk } from './tracing-sdk.js'

/** Present only while tracing is on: tracing-sdk.ts, the one module importing the SDK, is loaded then. */
export type Tracing = Awaited<ReturnType<typeof startSdk>>

/** Call before the store and the app are made (instrumentation patches their drivers). */
export async function startTracing (config: Pick<Config, 'tracing' | 'database' | 'redisUrl'>): Promise<Tracing | undefined> {
  if (config.tracing === undefined) return undefined
  return await (await import('./tracing-sdk.js')).startSdk(config.tracing, { postgres: config.database.kind === 'postgres', redis: config.redisUrl !== undefined })
}
