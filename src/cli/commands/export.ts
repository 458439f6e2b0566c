import { resolve } from 'node:path'
import type { Command } from 'commander'
import type { Clock } from '../../runtime/clock.js'
import { AtomicFile } from '../../services/transfer/files.js'
import { exportStore, LineSink, type StoreSummary } from '../../services/transfer/run.js'
import { loadConfig, type Config } from '../../config/index.js'
import { announceStore, reading } from '../store.js'
import { terminalProgress } from '../progress.js'
import { describeCounts, report, secondsSince } from '../summary.js'

/**
 * One snapshot of the DATABASE_URL store as an export file at `path` (complete or not at all), or on
 * stdout without one. `check` reads the finished file (at `tmp`) before it appears at `path`.
 */
export async function writeExport (config: Config, clock: Clock, label: string, path: string | undefined,
  check?: (tmp: string, summary: StoreSummary) => Promise<void>): Promise<StoreSummary> {
  // The store first: a store that cannot be read leaves no partial file behind.
  return await reading(config.database, config, async reader => {
    const file = path === undefined ? undefined : new AtomicFile(path)
    try {
      await file?.ready()
      const now = new Date(clock())
      const summary = await exportStore(reader, new LineSink(file?.stream ?? process.stdout), {
        liveSince: now.getTime() - config.idempotencyTtlMs, now, progress: terminalProgress(label)
      })
      await file?.finish()
      if (file !== undefined) await check?.(file.tmp, summary)
      await file?.commit()
      return summary
    } catch (err) {
      await file?.abort()
      throw err
    }
  })
}

export function registerExportCommand (program: Command, clock: Clock): void {
  program.command('export')
    .summary('Write the whole store as NDJSON')
    .description('Write the whole DATABASE_URL store as NDJSON (format version 2): a header with counts, settings, API keys ' +
      '(hashes only, never a secret), pets (exact int64 ids), live Idempotency-Keys, and an end line with the pets checksum. ' +
      'One consistent snapshot, streamed, while servers keep running. The file holds key hashes and the cursor key: keep it like the database.')
    .option('--out <file>', 'write to FILE (created 0600, complete or not at all) instead of stdout')
    .option('--json', 'print a JSON summary on stdout (needs --out)')
    .action(async (opts: { out?: string, json?: boolean }, cmd: Command) => {
      if (opts.json === true && opts.out === undefined) cmd.error('error: --json needs --out (stdout carries the export)')
      const started = performance.now()
      const config = loadConfig()
      announceStore(config, { readsOnly: true })
      const out = opts.out === undefined ? undefined : resolve(opts.out)
      const summary = await writeExport(config, clock, 'export', out)
      report(opts.json === true, { command: 'export', source: summary.kind, out: out ?? null, counts: summary.counts, petsSha256: summary.petsSha256, seconds: secondsSince(started) },
        `exported ${describeCounts(summary.counts)} from ${summary.kind}${out === undefined ? '' : ` to ${out}`} (pets sha256 ${summary.petsSha256})`)
    })
}
