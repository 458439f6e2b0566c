import type { Command } from 'commander'

export function registerServeCommand (program: Command): void {
  program.command('serve')
    .summary('Serve the API (same as npm start)')
    .description('Serve the API (same as npm start). Configured by environment variables only (PORT, HOST, DATABASE_URL, LOG_LEVEL, ...).')
    .addHelpText('after', '\nEvery setting, with its default and allowed values: docs/reference/configuration.md (and .env.example).')
    .action(async () => {
      const { startServer } = await import('../../server.js')
      await startServer()
    })
}
