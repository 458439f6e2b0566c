import { createReadStream, existsSync, mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { Command } from 'commander'
import type { Clock } from '../../runtime/clock.js'
import { readLines } from '../../services/transfer/lines.js'
import { parseExport } from '../../services/transfer/parse.js'
import type { StoreSummary } from '../../services/transfer/run.js'
import { loadConfig } from '../../config/index.js'
import { announceStore } from '../store.js'
import { terminalProgress } from '../progress.js'
import { describeCounts, report, secondsSince } from '../summary.js'
import { writeExport } from './export.js'

/** Reads a written export back through the import's checks (counts, every line, checksum), touching no store. */
async function verifyExportFile (path: string, written: StoreSummary): Promise<void> {
  const file = await parseExport(readLines(createReadStream(path))[Symbol.asyncIterator]())
  for await (const _ of file.records) { /* each record is checked as it is read */ }
  if (file.petsSha256() !== written.petsSha256) throw new Error('the backup file does not read back as written')
}

export function registerBackupCommand (program: Command, clock: Clock): void {
  program.command('backup')
    .summary('A verified copy of the live store at PATH')
    .description('A consistent, verified copy of the live DATABASE_URL store at PATH while servers keep serving. ' +
      'SQLite: a database file made with SQLite\'s online backup API and checked with integrity_check (restore: stop the servers, ' +
      'put it in place of the database file). PostgreSQL: an export file (as petstore export) from one snapshot, read back and ' +
      'checked (restore: petstore import PATH into an empty database; pg_dump remains the tool for whole-cluster backups). ' +
      'Exit 0 only when the copy is complete and verified; it never overwrites PATH, and creates its folder when missing.')
    .argument('<path>', 'where to write the backup (must not exist)')
    .option('--json', 'print a JSON summary on stdout')
    .action(async (path: string, opts: { json?: boolean }) => {
      const started = performance.now()
      const dest = resolve(path)
      if (existsSync(dest)) throw new Error(`${dest} already exists; a backup never overwrites a file`)
      const config = loadConfig()
      const db = config.database
      announceStore(config, { readsOnly: true })
      if (db.kind === 'sqlite' && db.path === ':memory:') throw new Error('DATABASE_URL is sqlite::memory:, which has nothing to back up')
      // A backup folder that does not exist yet (backups/ on a first run) is made, as mkdir -p would.
      mkdirSync(dirname(dest), { recursive: true })
      if (db.kind === 'sqlite') {
        const { backupSqlite } = await import('../../store/sqlite/backup.js')
        const r = await backupSqlite(db.path, dest, terminalProgress('backup'))
        report(opts.json === true, { command: 'backup', source: 'sqlite', path: dest, format: 'sqlite', bytes: r.bytes, pages: r.pages, integrity: r.integrity, counts: { pets: r.pets, apiKeys: r.apiKeys }, seconds: secondsSince(started) },
          `backed up ${r.pets} pets and ${r.apiKeys} API keys to ${dest} (${r.bytes} bytes, integrity_check ok)`)
        return
      }
      const summary = await writeExport(config, clock, 'backup', dest, verifyExportFile)
      report(opts.json === true, { command: 'backup', source: 'postgres', path: dest, format: 'ndjson', counts: summary.counts, petsSha256: summary.petsSha256, verified: true, seconds: secondsSince(started) },
        `backed up ${describeCounts(summary.counts)} to ${dest} (export format, read back and verified)`)
    })
}
