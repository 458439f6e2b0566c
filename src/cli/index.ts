#!/usr/bin/env node
/*
 * The `petstore` command: a thin dispatcher, one file per command under commands/.
 * Results go to stdout, everything else to stderr; usage errors exit 2, failures exit 1.
 */
// First: refuses an unsupported Node before better-sqlite3 is loaded.
import '../node-version.js'
import { Command, CommanderError } from 'commander'
import { registerBackupCommand } from './commands/backup.js'
import { registerCopyCommand } from './commands/copy.js'
import { registerExportCommand } from './commands/export.js'
import { registerImportCommand } from './commands/import.js'
import { registerKeysCommands } from './commands/keys.js'
import { registerMigrateCommand } from './commands/migrate.js'
import { registerServeCommand } from './commands/serve.js'

const program = new Command('petstore')
  .description('Petstore v1 service and its administration. Every command honours DATABASE_URL.')
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
    process.exit(err.exitCode === 0 ? 0 : 2)
  }
  process.stderr.write(`petstore: ${(err as Error).message}\n`)
  process.exit(1)
}
