#!/usr/bin/env node
/*
 * The `petstore` command: a thin dispatcher, one file per command under commands/.
 * Results go to stdout, everything else to stderr. Exit codes (docs/reference/cli.md): 0 done, 1 failed,
 * 2 usage error, 3 nothing to do.
 */
// First: refuses an unsupported Node before better-sqlite3 is loaded.
import '../runtime/node-version.js'
import { CommanderError } from 'commander'
import { ConfigError } from '../config/index.js'
import { describeFailure } from '../runtime/failure-lines.js'
import { systemClock } from '../runtime/clock.js'
import { CliError, EXIT } from './exit.js'
import { buildProgram } from './program.js'

const program = buildProgram(systemClock)

// A reader that stops early (`petstore keys list | head -1`) closes the pipe: no crash and no stack;
// the command ends with its own exit code. Where stdout is the product (an export, a new key's
// secret, a check's result) the command itself fails on the lost output. Any other failure to write
// stdout is a failure.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') return
  process.stderr.write(`petstore: cannot write to stdout (${err.code ?? err.message})\n`)
  process.exit(EXIT.failure)
})

try {
  await program.parseAsync(process.argv)
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version exit 0; every other commander error, a missing command and a command's own
    // cmd.error included (both with commander's exit code 1), is a usage error.
    process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage)
  }
  // A bad variable (loadConfig's ConfigError) is a failure naming it: "invalid configuration: …".
  process.stderr.write(`petstore: ${err instanceof ConfigError ? describeFailure(err) : (err as Error).message}\n`)
  process.exit(err instanceof CliError ? err.exitCode : EXIT.failure)
}
