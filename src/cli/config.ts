import { describeFailure } from '../runtime/failure-lines.js'
import { ConfigError, loadConfig, type Config } from '../config/index.js'
import { CliError } from './exit.js'

/** The CLI's view of the configuration: a bad variable is a failure (exit 1) naming it. */
export function loadCliConfig (): Readonly<Config> {
  try {
    return loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(describeFailure(err))
    throw err
  }
}
