import type { Command } from 'commander'
import { describeFailure } from '../../runtime/failure-lines.js'
import { migrateStore } from '../../store/index.js'
import { loadConfig } from '../../config/index.js'
import { CliError } from '../exit.js'
import { sayStore } from '../store.js'

export function registerMigrateCommand (program: Command): void {
  program.command('migrate')
    .summary('Apply pending schema migrations')
    .description('Apply pending schema migrations to the DATABASE_URL store, creating a SQLite database that does not exist yet (start applies them too).')
    .action(async () => {
      const config = loadConfig()
      sayStore(config.database)
      const applied = await migrateStore(config).catch((err: unknown) => { throw new CliError(describeFailure(err, config)) })
      process.stderr.write(applied.length === 0 ? 'schema is up to date\n' : `applied migrations: ${applied.join(', ')}\n`)
    })
}
