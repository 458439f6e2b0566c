// Loaded by the entry (server.ts) once node-version.js and compile-cache.js have run.
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { loadConfig, type Config } from './config/index.js'
import { describeFailure, describeListenFailure } from './runtime/failure-lines.js'
import { handOutFirstKey } from './services/first-key.js'
import { openLog } from './logging/logger.js'
import { buildMetricsApp, Metrics } from './observability/metrics.js'
import { launcherLinks, onStopRequest } from './runtime/stop-signals.js'
import { startStore, type StoreOptions } from './store/index.js'
import { describeLocation } from './store/location.js'
import { hasBackgroundWriter, isOpening } from './store/store.js'
import { StoreOpeningError } from './errors.js'
import { startTracing } from './observability/tracing.js'

/**
 * The service's start: config → tracing → store → app → listen (API, and /metrics on its own port).
 * A SQLite file is checked in a process of its own while the server listens, then migrated
 * (store/sqlite/opening.ts): until then /healthz answers 200, /readyz and /v1 503; a file that fails
 * the check ends the start as any start-up failure does.
 * Shutdown (runtime/stop-signals.ts says what asks for it): on SIGTERM first SHUTDOWN_DRAIN_MS of
 * readiness 503 while serving; then stop accepting, let in-flight requests finish (at most
 * SHUTDOWN_TIMEOUT_MS), close the store last, exit 0. A start-up failure is one line and exit 1.
 */
export async function startServer (env: NodeJS.ProcessEnv = process.env, storeOptions: StoreOptions = {}): Promise<void> {
  // Read first: a launcher that ends while the server starts must still count as ended.
  const launcher = launcherLinks()
  let config: Readonly<Config>
  try {
    config = loadConfig(env)
  } catch (err) {
    return cannotStart(err)
  }

  // Before the store: the database driver's instrumentation must patch it before it is loaded.
  const tracing = await startTracing(config).catch((err: unknown) => cannotStart(err, config))

  const opening = performance.now()
  let store = await startStore(config, storeOptions).catch((err: unknown) => cannotStart(err, config))
  if (tracing !== undefined) store = tracing.traceStore(store)

  // Process metrics only where they are served: they sample the event loop and observe GC.
  const metrics = new Metrics(store, { processMetrics: config.metrics !== undefined })
  const log = openLog(config, tracing)
  metrics.logLinesDropped = log.dropped
  let app: FastifyInstance
  try {
    app = await buildApp({ config, store, metrics, logger: log.options, tracing })
    app.log.info(`store: ${describeLocation(config.database)}`)
    for (const [old, now] of config.renamedSettings) app.log.warn({ setting: old, renamed: now }, `${old} is deprecated: it is read as ${now}, its new name; rename it before the next minor version`)
  } catch (err) {
    await store.close().catch(() => {})
    await log.end()
    return cannotStart(err, config)
  }
  const metricsApp = config.metrics === undefined ? undefined : buildMetricsApp(metrics)
  /** A start-up failure once the app is built: both apps closed (the store with the API's), the log ended. */
  const fail = async (err: unknown): Promise<never> => {
    await metricsApp?.close().catch(() => {})
    await app.close().catch(() => {})
    await log.end()
    return cannotStart(err, config)
  }

  // The grace period covers the drain and then SHUTDOWN_TIMEOUT_MS for in-flight requests.
  onStopRequest({ delayMs: config.shutdownDrainMs + config.shutdownTimeoutMs, launcher: config.stopWithLauncher ? launcher : undefined, logger: { error: (m: unknown) => app.log.error(m) } }, async ({ signal, launcherExited, err }) => {
    if (err !== undefined) {
      app.log.error({ err }, 'shutting down after an uncaught error')
    } else {
      // SIGTERM is how orchestrators stop an instance: drain first. SIGINT is a person at a terminal:
      // at once. A launcher that ended (runtime/stop-signals.ts) gets what its SIGTERM would have.
      if ((signal === 'SIGTERM' || launcherExited === true) && config.shutdownDrainMs > 0) {
        app.log.info({ signal, launcherExited, delayMs: config.shutdownDrainMs }, 'shutting down: draining (readiness 503, still serving)')
        await app.drain(config.shutdownDrainMs)
      }
      app.log.info({ signal, launcherExited }, 'shutting down: finishing in-flight requests')
    }
    await metricsApp?.close()
    // Stops listening, closes idle keep-alive sockets, waits for in-flight requests, then closes the store.
    await app.close()
    // The spans still buffered are exported before the exit (bounded by the exporter's timeout).
    await tracing?.shutdown()
    app.log.info('shut down cleanly')
    await log.end()
  })

  const url = await app.listen({ host: config.host, port: config.port }).catch(async (err: unknown) => await fail(describeListenFailure(err, config.host, config.port)))
  try {
    await app.storeOpened()
  } catch (err) {
    // Closed during the check (SIGTERM): the shutdown goes on as asked.
    if (err instanceof StoreOpeningError) return
    return await fail(err)
  }
  app.log.info(isOpening(store) ? { storeOpenMs: Math.round(performance.now() - opening) } : {}, SERVING_LINE)
  // The SQLite checkpoint thread boots beside the first requests, not before them.
  if (hasBackgroundWriter(store)) store.startWriter()
  try {
    // After listening, so the curl example names the real port.
    if (await store.countApiKeys() === 0) await handOutFirstKey(store, { url, firstKeyFile: config.firstKeyFile, cli: config.cli }, app.log)
  } catch (err) {
    return await fail(err)
  }
  if (metricsApp !== undefined && config.metrics !== undefined) {
    const { host, port } = config.metrics
    const at = await metricsApp.listen({ host, port }).catch(async (err: unknown) => await fail(describeListenFailure(err, host, port, { host: 'METRICS_HOST', port: 'METRICS_PORT' })))
    app.log.info({ url: `${at}/metrics` }, 'metrics listening')
  }
}

/** Logged once the store is open (on SQLite: checked, then migrated) and /v1 is served. */
export const SERVING_LINE = 'serving /v1: the store is open'

/** A start-up failure: one line on stderr (cause and setting; never a stack or a password), exit 1. */
function cannotStart (err: unknown, config?: Readonly<Config>): never {
  const line = typeof err === 'string' ? err : describeFailure(err, config)
  process.stderr.write(`petstore: cannot start: ${line}\n`)
  process.exit(1)
}
