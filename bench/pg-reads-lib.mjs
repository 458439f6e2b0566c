// Shared by the PostgreSQL read benches (bench/pg-drivers.mjs, bench/pg-misses.mjs): CPU time of
// processes from /proc/PID/task/*/schedstat (nanoseconds on a CPU, every thread; /proc/PID/stat's
// clock ticks are 10 ms, too coarse for a few thousand reads), the PostgreSQL server's processes,
// an open-loop fixed-rate driver, and the 1M-pet database.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** CPU nanoseconds a process has used so far, all threads; 0 when it is gone. */
export function cpuNs (pid) {
  let sum = 0
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      try { sum += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]) } catch {}
    }
  } catch {}
  return sum
}

/** The postmaster and every process it forked (backends, checkpointer, walwriter…). */
export function serverPids (dataDir) {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
  const pids = [postmaster]
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue
    try {
      const ppid = Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[1])
      if (ppid === postmaster) pids.push(Number(p))
    } catch {}
  }
  return pids
}

/**
 * A CPU meter over a set of processes found again at the end (backends opened during the run count
 * from zero). `find()` returns the pids.
 */
export function cpuMeter (find) {
  const before = new Map(find().map(p => [p, cpuNs(p)]))
  return () => {
    let ns = 0
    for (const p of new Set([...before.keys(), ...find()])) ns += Math.max(0, cpuNs(p) - (before.get(p) ?? 0))
    return ns
  }
}

export const percentile = (sorted, p) => sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)]

/**
 * Open loop at `rate` operations per second for `seconds`: every 5 ms it starts the operations due
 * (so a slow answer delays nothing that follows, and queueing shows in latency). Returns the count
 * done, failures and latencies (ms, sorted).
 */
export async function fixedRate (rate, seconds, op) {
  const latencies = []
  let failures = 0
  let started = 0
  const pending = new Set()
  const t0 = performance.now()
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      const elapsed = (performance.now() - t0) / 1000
      if (elapsed >= seconds) { clearInterval(timer); resolve(); return }
      const due = Math.floor(elapsed * rate)
      for (; started < due; started++) {
        const s = performance.now()
        const p = op().then(() => { latencies.push(performance.now() - s) }, () => { failures++ })
        pending.add(p)
        p.finally(() => pending.delete(p))
      }
    }, 5)
  })
  await Promise.all(pending)
  latencies.sort((a, b) => a - b)
  return { done: latencies.length, failures, latencies }
}

/** Creates database `name` with the service's migrations and `pets` pets (names, categories, statuses as the main bench's). */
export async function makePetsDb (pg, adminUrl, name, pets, migratePostgres) {
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = adminUrl.replace(/\/postgres$/, `/${name}`)
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  await migratePostgres(c)
  await c.query(`INSERT INTO pets (name, category_id, status)
    SELECT convert_to('pet-' || x, 'UTF8'), x % 97, (ARRAY['available', 'pending', 'sold'])[(x % 3) + 1]
    FROM generate_series(1, $1::int) AS x`, [pets])
  await c.query('VACUUM ANALYZE')
  await c.end()
  return url
}
