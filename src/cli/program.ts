import { readFileSync } from 'node:fs'
import { Command, type ErrorOptions } from 'commander'
import type { Clock } from '../runtime/clock.js'
import { registerBackupCommand } from './commands/backup.js'
import { registerConformanceCommand } from './commands/conformance.js'
import { registerCopyCommand } from './commands/copy.js'
import { registerExportCommand } from './commands/export.js'
import { registerImportCommand } from './commands/import.js'
import { registerKeysCommands } from './commands/keys.js'
import { registerMigrateCommand } from './commands/migrate.js'
import { registerServeCommand } from './commands/serve.js'

// package.json sits two levels up from both src/cli/ and dist/cli/.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

/**
 * A commander Command that names a mistyped option before anything else. Commander checks required
 * options before unknown ones, so `keys create --nmae bob` would answer "required option '--name'
 * not specified"; here an unknown option of a command without subcommands is reported first, by
 * commander itself ("unknown option '--nmae'", with its "Did you mean --name?").
 */
class PetstoreCommand extends Command {
  override createCommand (name?: string): PetstoreCommand {
    return new PetstoreCommand(name)
  }

  override parseOptions (args: string[]): { operands: string[], unknown: string[] } {
    const parsed = super.parseOptions(args)
    const flag = parsed.unknown.find(arg => arg.startsWith('-'))
    // -h/--help (commander's default help flags) still reach commander, which prints the help.
    const helpAsked = parsed.unknown.some(arg => arg === '-h' || arg === '--help')
    if (flag !== undefined && !helpAsked && this.commands.length === 0) {
      // unknownOption: commander's own report (message, suggestion, usage, exit override).
      (this as unknown as { unknownOption: (flag: string) => never }).unknownOption(flag)
    }
    return parsed
  }

  /** A usage error: one line naming the mistake, then where the usage is (never the whole help, which would push the error out of view). */
  override error (message: string, errorOptions?: ErrorOptions): never {
    const path: string[] = []
    for (let cmd: Command | null = this; cmd !== null; cmd = cmd.parent) path.unshift(cmd.name())
    this.showHelpAfterError(`Run '${path.join(' ')} --help' for usage.`)
    return super.error(message, errorOptions)
  }
}

/** Commander's "error: …\n(Did you mean --name?)" as one line: "petstore: error: … (did you mean --name?)". */
const oneLineError = (s: string) => `petstore: ${s.trimEnd().replace(/\n\(Did you mean ([^)]*)\)/, ' (did you mean $1)').replace(/\n/g, ' ')}\n`

/**
 * The `petstore` program: every command registered, nothing parsed (docs/reference/cli.md is written
 * from it). `clock` is the time key expiry, revocation and live Idempotency-Keys are judged by.
 */
export function buildProgram (clock: Clock): Command {
  const program = new PetstoreCommand('petstore')
    .description('Petstore v1 service and its administration. Every command honours DATABASE_URL and names its store: on stderr (petstore: store: …), serve in its log.')
    .version(version, '-V, --version', 'print the version')
    .configureOutput({ outputError: (s, write) => write(oneLineError(s)) })
    .addHelpText('after', '\nOptions of a command: petstore COMMAND --help (all: docs/reference/cli.md)')
    .exitOverride()
  registerServeCommand(program)
  registerMigrateCommand(program)
  registerKeysCommands(program, clock)
  registerBackupCommand(program, clock)
  registerExportCommand(program, clock)
  registerImportCommand(program)
  registerCopyCommand(program, clock)
  registerConformanceCommand(program)
  return program
}
