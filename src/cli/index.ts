#!/usr/bin/env node
/*
 * The `petstore` command: a thin dispatcher, one file per command under commands/.
 * Results go to stdout, everything else to stderr. Exit codes (README): 0 done, 1 failed,
 * 2 usage error, 3 nothing to do.
 */
// First: refuses an unsupported Node before better-sqlite3 is loaded.
import '../node-version.js'
import { readFileSync } from 'node:fs'
import { Command, CommanderError } from 'commander'
import { registerBackupCommand } from './commands/backup.js'
import { registerCopyCommand } from './commands/copy.js'
import { registerExportCommand } from './commands/export.js'
import { registerImportCommand } from './commands/import.js'
import { registerKeysCommands } from './commands/keys.js'
import { registerMigrateCommand } from './commands/migrate.js'
import { registerServeCommand } from './commands/serve.js'
import { CliError, EXIT } from './exit.js'

// package.json sits two levels up from both src/cli/ and dist/cli/.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

const program = new Command('petstore')
  .description('Petstore v1 service and its administration. Every command honours DATABASE_URL and says on stderr which store it uses.')
  .version(version, '-V, --version', 'print the version')
  .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) })
  .showHelpAfterError()
  .exitOverride()

registerServeCommand(program)
registerMigrateCommand(program)
registerKeysCommands(program)
registerBackupCommand(program)
registerExportCommand(program)
registerImportCommand(program)
registerCopyCommand(program)

try {
  await program.parseAsync(process.argv)
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version exit 0; every other commander error, a missing command included (commander
    // prints the usage then, with exit code 1), is a usage error.
    process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.usage)
  }
  process.stderr.write(`petstore: ${err instanceof CliError ? err.message : (err as Error).message}\n`)
  process.exit(err instanceof CliError ? err.exitCode : EXIT.failure)
}
