import { once } from 'node:events'
import { createReadStream } from 'node:fs'
import type { Command } from 'commander'
import { readLines } from '../../services/transfer/lines.js'
import { importExport } from '../../services/transfer/run.js'
import { openTransferWriter } from '../../store/transfer.js'
import { loadConfig } from '../../config/index.js'
import { sayStore } from '../store.js'
import { terminalProgress } from '../progress.js'
import { describeCounts, report, secondsSince } from '../summary.js'

export function registerImportCommand (program: Command): void {
  program.command('import')
    .summary('Load an export file into the store')
    .description('Load an export file (petstore export) into the DATABASE_URL store, SQLite or PostgreSQL, keeping every id; ' +
      'id sequences move past the highest id. One transaction: any bad line, truncation or collision exits 1 naming the line, ' +
      'and the store is left as it was. The store must be empty (no pets, API keys or Idempotency-Keys) unless --into-nonempty.')
    .argument('[file]', 'the export file; stdin when omitted')
    .option('--into-nonempty', 'add to a store that already holds data: any pet id, API key id or hash, or Idempotency-Key ' +
      'already there fails the whole import; the store keeps its own settings (so cursors it issued stay valid, the file\'s do not)')
    .option('--json', 'print a JSON summary on stdout')
    .action(async (path: string | undefined, opts: { intoNonempty?: boolean, json?: boolean }, cmd: Command) => {
      if (path === undefined && process.stdin.isTTY === true) cmd.error('error: give an export FILE, or pipe one into stdin')
      const started = performance.now()
      const config = loadConfig()
      sayStore(config.database)
      // The file is opened before the store is touched, so a wrong path fails first.
      const input = path === undefined ? process.stdin : createReadStream(path)
      if (path !== undefined) {
        await once(input, 'open').catch((err: NodeJS.ErrnoException) => { throw new Error(`cannot read ${path}: ${err.code ?? err.message}`) })
      }
      const writer = await openTransferWriter(config.database, config)
      try {
        const summary = await importExport(readLines(input), writer, {
          intoNonempty: opts.intoNonempty === true, progress: terminalProgress('import')
        })
        report(opts.json === true, { command: 'import', source: summary.source, target: summary.kind, intoNonempty: summary.intoNonempty, counts: summary.counts, petsSha256: summary.petsSha256, seconds: secondsSince(started) },
          `imported ${describeCounts(summary.counts)} into ${summary.kind} (pets sha256 ${summary.petsSha256} verified)`)
      } finally {
        input.destroy()
        await writer.close()
      }
    })
}
