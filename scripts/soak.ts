// The bounded soak (test/helpers/soak.ts): `npm run test:soak`. SOAK_SECONDS (default 180) at
// SOAK_FRACTION (default 0.5) of the measured peak, 20% writes. Exits 1 on any 5xx or client error,
// RSS growth of 10% or more after the first minute, or file descriptors that keep growing.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { formatSoak, runSoak } from '../test/helpers/soak.js'

const seconds = Number(process.env.SOAK_SECONDS ?? 180)
const dir = mkdtempSync(join(tmpdir(), 'petstore-soak-'))
try {
  const r = await runSoak({
    dbPath: join(dir, 'soak.db'),
    seconds,
    probeSeconds: 10,
    fraction: Number(process.env.SOAK_FRACTION ?? 0.5),
    writeShare: 0.2,
    windowSeconds: Number(process.env.SOAK_WINDOW_SECONDS ?? Math.min(60, seconds / 3)),
    log: (l) => process.stderr.write(`${l}\n`)
  })
  console.log(formatSoak(r, seconds))
  const failures = [
    r.serverErrors > 0 && `${r.serverErrors} 5xx`,
    r.clientErrors > 0 && `${r.clientErrors} failed connections`,
    r.rssGrowthPct >= 10 && `RSS grew ${r.rssGrowthPct.toFixed(1)}%`,
    r.fdsEnd > r.fdsStart + 8 && `fds grew ${r.fdsStart} → ${r.fdsEnd}`,
    r.fdsMax > r.fdsStart + 70 && `fds peaked at ${r.fdsMax}`
  ].filter(Boolean)
  if (r.p99LastMs > 3 * Math.max(r.p99FirstMs, 5)) console.log(`note: p99 rose from ${r.p99FirstMs.toFixed(1)} to ${r.p99LastMs.toFixed(1)} ms (shared machine?)`)
  console.log(failures.length === 0 ? 'soak: pass' : `soak: FAIL (${failures.join('; ')})`)
  process.exitCode = failures.length === 0 ? 0 : 1
} finally {
  rmSync(dir, { recursive: true, force: true })
}
