import { ConfigError, loadConfig, type Config } from '../config.js'

/** The CLI's view of the configuration: a bad variable is a failure (exit 1) naming it. */
export function loadCliConfig (): Readonly<Config> {
  try {
    return loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) throw new Error(`invalid configuration: ${err.message}`)
    throw err
  }
}
