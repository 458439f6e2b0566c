import { isDeepStrictEqual } from 'node:util'
import type { Command } from 'commander'
import type { Clock } from '../../runtime/clock.js'
import { ConfigError, type DatabaseLocation, loadConfig, parseDatabaseUrl } from '../../config/index.js'
import { COUNT_NAMES } from '../../services/transfer/format.js'
import { copyStore, sameSummary, type StoreSummary, summarizeStore } from '../../services/transfer/run.js'
import { openTransferWriter } from '../../store/transfer.js'
import { reading, requireDatabase, sayStore } from '../store.js'
import { terminalProgress } from '../progress.js'
import { report, secondsSince } from '../summary.js'

function table (source: StoreSummary, target: StoreSummary): string {
  const rows = [['', `source (${source.kind})`, `target (${target.kind})`]]
  for (const n of COUNT_NAMES) rows.push([n, String(source.counts[n]), String(target.counts[n])])
  rows.push(['petsSha256', source.petsSha256, target.petsSha256])
  return rows.map(r => r.join('\t')).join('\n') + '\n'
}

export function registerCopyCommand (program: Command, clock: Clock): void {
  program.command('copy')
    .summary('Copy the store into another, empty one; verify')
    .description('Copy the whole DATABASE_URL store into another, empty store (e.g. SQLite into PostgreSQL) in one transaction, ' +
      'then verify: reads both stores again and compares the counts and a SHA-256 over every pet, printed side by side. ' +
      'Exit 0 only when they match. Stop the servers writing to the source first (docs/how-to/postgresql.md).')
    .requiredOption('--to <url>', 'the target store: postgres://… or sqlite:PATH (migrated first; must hold no pets, API keys or Idempotency-Keys)')
    .option('--json', 'print the verification as JSON on stdout instead of a table')
    .action(async (opts: { to: string, json?: boolean }, cmd: Command) => {
      let target: DatabaseLocation
      try {
        target = parseDatabaseUrl(opts.to, process.cwd())
      } catch (err) {
        if (err instanceof ConfigError) cmd.error(`error: --to: ${err.message.replace(/^DATABASE_URL: /, '')}`)
        throw err
      }
      const config = loadConfig()
      sayStore(config.database)
      sayStore(target, 'target')
      if (isDeepStrictEqual(config.database, target)) throw new Error('--to names the DATABASE_URL store itself')
      if (target.kind === 'sqlite' && target.path === ':memory:') throw new Error('--to sqlite::memory: would vanish when the copy ends')
      requireDatabase(config, { readsOnly: true })
      const started = performance.now()
      const liveSince = clock() - config.idempotencyTtlMs
      const copied = await reading(config.database, config, async reader => {
        const writer = await openTransferWriter(target, config)
        try {
          return await copyStore(reader, writer, { liveSince, progress: terminalProgress('copy') })
        } finally {
          await writer.close()
        }
      })
      const copySeconds = secondsSince(started)
      // Both stores are read again, each on its own, now that the copy is committed.
      const source = await reading(config.database, config, reader => summarizeStore(reader, liveSince))
      const copy = await reading(target, config, reader => summarizeStore(reader, liveSince))
      const verified = sameSummary(copied, copy) && sameSummary(source, copy)
      if (opts.json === true) report(true, { command: 'copy', verified, source, target: copy, seconds: secondsSince(started), copySeconds }, '')
      else process.stdout.write(table(source, copy))
      if (!sameSummary(copied, copy)) throw new Error('verification failed: the target does not hold what was copied')
      if (!sameSummary(source, copy)) {
        throw new Error('verification failed: the source changed during the copy (a server kept writing to it). ' +
          'Stop the servers writing to the source, empty the target (drop and create its database), and copy again')
      }
      process.stderr.write(`copy verified: ${source.counts.pets} pets, same counts and pets checksum on both stores\n`)
    })
}
