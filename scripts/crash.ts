// The long form of the crash-consistency harness (test/helpers/crash.ts): `npm run test:crash`.
// CRASH_ROUNDS (default 40) rounds, stopping early after CRASH_MAX_SECONDS (default 300). Exits 1 on any violation.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCrashRounds } from '../test/helpers/crash.js'

const dir = mkdtempSync(join(tmpdir(), 'petstore-crash-'))
const rounds = Number(process.env.CRASH_ROUNDS ?? 40)
const maxSeconds = Number(process.env.CRASH_MAX_SECONDS ?? 300)
const started = Date.now()
try {
  const stats = await runCrashRounds({
    dbPath: join(dir, 'crash.db'),
    rounds,
    writers: 16,
    killAfterMs: [100, 1500],
    maxMs: maxSeconds * 1000,
    log: (line) => process.stderr.write(`${line}\n`)
  })
  const secs = ((Date.now() - started) / 1000).toFixed(0)
  console.log(`crash: ${stats.rounds} SIGKILL rounds in ${secs}s; creates acknowledged ${stats.acknowledged}, failed ${stats.failed}, unknown ${stats.unknown} (${stats.unknownStored} of them stored); pets stored ${stats.stored}; violations ${stats.violations.length}`)
  for (const v of stats.violations) console.log(`  violation: ${v}`)
  process.exitCode = stats.violations.length === 0 ? 0 : 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
