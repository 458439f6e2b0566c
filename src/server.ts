// First: refuses an unsupported Node before better-sqlite3 is loaded.
import './node-version.js'
import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { buildMetricsApp, Metrics } from './plugins/metrics.js'
import { createApiKey } from './services/api-keys.js'
import { openStore } from './store/index.js'

/**
 * The process entry: config → store → app → listen (API, and /metrics on its own port), with
 * graceful shutdown on SIGTERM/SIGINT: stop accepting, close idle keep-alive sockets at once, let
 * in-flight requests finish (at most SHUTDOWN_TIMEOUT_MS), close the store last, exit 0.
 */
export async function startServer (env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let config
  try {
    config = loadConfig(env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`petstore: invalid configuration: ${err.message}\n`)
      process.exit(1)
    }
    throw err
  }

  const store = await openStore(config)

  if (await store.countApiKeys() === 0) {
    // First start: hand the newcomer a key at once. Printed once, to the terminal, never logged.
    const { key } = await createApiKey(store, 'first key')
    process.stdout.write(
      '\nNo API keys existed, so one was created. It is shown only this once:\n\n' +
      `    ${key}\n\n` +
      `Try: curl -H 'Authorization: Bearer ${key}' http://${config.host}:${config.port}/v1/pets\n` +
      'Make more with: npx petstore keys create --name NAME\n\n'
    )
  }

  const metrics = new Metrics(store, { processMetrics: true })
  let app: FastifyInstance
  try {
    app = await buildApp({ config, store, metrics, logger: { level: config.logLevel } })
  } catch (err) {
    process.stderr.write(`petstore: cannot start: ${(err as Error).message}\n`)
    await store.close()
    process.exit(1)
  }
  const metricsApp = config.metrics === undefined ? undefined : buildMetricsApp(metrics)

  closeWithGrace({ delay: config.shutdownTimeoutMs, logger: { error: (m: unknown) => app.log.error(m) } }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'shutting down after an uncaught error')
    else app.log.info({ signal }, 'shutting down: finishing in-flight requests')
    await metricsApp?.close()
    // Stops listening, closes idle keep-alive sockets, waits for in-flight requests, then closes the store.
    await app.close()
    app.log.info('shut down cleanly')
  })

  try {
    await app.listen({ host: config.host, port: config.port })
    if (metricsApp !== undefined && config.metrics !== undefined) {
      const at = await metricsApp.listen({ host: config.metrics.host, port: config.metrics.port })
      app.log.info({ url: `${at}/metrics` }, 'metrics listening')
    }
  } catch (err) {
    app.log.fatal({ err }, 'could not listen')
    process.stderr.write(`petstore: cannot listen on ${config.host}:${config.port} (check HOST and PORT): ${(err as Error).message}\n`)
    await metricsApp?.close()
    await app.close()
    process.exit(1)
  }
}

function isEntry (): boolean {
  const argv1 = process.argv[1]
  if (argv1 === undefined) return false
  try {
    return import.meta.url === pathToFileURL(realpathSync(argv1)).href
  } catch {
    return false
  }
}

if (isEntry()) await startServer()
