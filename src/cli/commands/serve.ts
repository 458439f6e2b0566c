import type { Command } from 'commander'

export function registerServeCommand (program: Command): void {
  program.command('serve')
    .description('Serve the API (same as npm start). Configured by PORT, HOST, DATABASE_URL, LOG_LEVEL and the rest of the README table.')
    .action(async () => {
      const { startServer } = await import('../../server.js')
      await startServer()
    })
}
