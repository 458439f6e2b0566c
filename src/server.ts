import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { createApiKey } from './services/api-keys.js'
import { openStore } from './store/index.js'

/**
 * The process entry: config → store → app → listen, with graceful shutdown on SIGTERM/SIGINT.
 * Production defaults (JSON logs on stdout, timeouts) are chosen here.
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

  const app = await buildApp({ config, store, logger: { level: config.logLevel } })

  closeWithGrace({ delay: config.shutdownTimeoutMs }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'shutting down after an uncaught error')
    else app.log.info({ signal }, 'shutting down: finishing in-flight requests')
    await app.close()
  })

  try {
    await app.listen({ host: config.host, port: config.port })
  } catch (err) {
    app.log.fatal({ err }, 'could not listen')
    process.stderr.write(`petstore: cannot listen on ${config.host}:${config.port} (check HOST and PORT): ${(err as Error).message}\n`)
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
