import type { Command } from 'commander'
import { loadCliConfig } from '../config.js'
import { migrateStore } from '../../store/index.js'

export function registerMigrateCommand (program: Command): void {
  program.command('migrate')
    .description('Apply pending schema migrations to the DATABASE_URL store (start applies them too).')
    .action(async () => {
      const applied = await migrateStore(loadCliConfig())
      process.stderr.write(applied.length === 0 ? 'schema is up to date\n' : `applied migrations: ${applied.join(', ')}\n`)
    })
}
