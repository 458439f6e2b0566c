// `npm run bench:scale` — scenario 9, write scaling: creates/s and p99 with 1, 2 and 3 instances of
// the production build (dist/server.js) over one throwaway PostgreSQL, directly and through PgBouncer
// (transaction mode, stock startup-parameter policy), plus what bounds it: commits per second and
// creates per commit (group commit), WAL flushes, how many transactions wait for the insert lock
// (sampled from pg_locks), and the CPU each component used. Loopback only, bounded (~1 min with the
// defaults; BENCH_SCALE_DURATION seconds per run). Writes bench/results/scaling.{json,md}.
// See docs/explanation/performance.md (write scaling) and docs/explanation/scaling.md.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { startCluster, findPgBin } from '../scripts/pg-cluster.mjs'
import { startPgBouncer } from '../scripts/pgbouncer.mjs'
import { cpuSeconds, createDatabase, DIST, fmt, log, percentile, requireBuild, ROOT, scratch, sleep, startService as startProcess, stop } from './lib.mjs'

requireBuild()
const { hashApiKey } = await import(join(DIST, 'services/api-keys.js'))

const DURATION = Number(process.env.BENCH_SCALE_DURATION ?? 5)
// The same offered load for every instance count: CONNECTIONS clients in all, spread evenly.
const CONNECTIONS = Number(process.env.BENCH_SCALE_CONNECTIONS ?? 48)
const INSTANCES = [1, 2, 3]
const KEY = 'psk_' + 's'.repeat(43)
const POST = { method: 'POST', body: JSON.stringify({ name: 'Rex', categoryId: 42, status: 'pending' }), headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' } }

const session = scratch('petstore-bench-scale-')

// Overload shedding is off: this measures how far creates go, not when the service starts refusing them.
async function startService (name, databaseUrl) {
  return await startProcess(session, name, { LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl, EVENT_LOOP_MAX_DELAY_MS: '0' })
}

async function stats (admin, db) {
  const r = await admin.query(`SELECT d.xact_commit::bigint AS commits, w.wal_sync::bigint AS syncs, w.wal_bytes::bigint AS wal
    FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = $1`, [db])
  return { commits: Number(r.rows[0].commits), syncs: Number(r.rows[0].syncs), wal: Number(r.rows[0].wal) }
}

async function run (route, n) {
  const db = `scale_${route}_${n}`
  const direct = await createDatabase(cluster.url, db, hashApiKey(KEY))
  const url = route === 'pgbouncer' ? direct.replace(`:${cluster.port}/`, `:${bouncer.port}/`) : direct
  const services = await Promise.all(Array.from({ length: n }, async (_, i) => await startService(`${db}-${i}`, url)))
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  // Warm up (connections opened, code optimised), then the measured run.
  await Promise.all(services.map(s => autocannon({ url: `http://127.0.0.1:${s.port}/v1/pets`, ...POST, connections: Math.max(1, Math.round(CONNECTIONS / n)), duration: 1 })))
  let waiting = 0; let samples = 0; let sampling = true
  const sampler = (async () => {
    while (sampling) {
      // The insert lock is the only advisory lock taken while serving.
      const r = await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
      waiting += r.rows[0].n; samples++
      await sleep(25)
    }
  })()
  const pids = { service: services.map(s => s.child.pid), postgres: cluster.pids(), pgbouncer: route === 'pgbouncer' ? bouncer.pids() : [] }
  const cpu0 = Object.fromEntries(Object.entries(pids).map(([k, v]) => [k, cpuSeconds(v)]))
  const s0 = await stats(admin, db)
  const latencies = []
  const t0 = process.hrtime.bigint()
  const results = await Promise.all(services.map(s => {
    const inst = autocannon({ url: `http://127.0.0.1:${s.port}/v1/pets`, ...POST, connections: Math.max(1, Math.round(CONNECTIONS / n)), duration: DURATION, timeout: 10 })
    inst.on('response', (_c, _status, _bytes, ms) => { latencies.push(ms) })
    return inst
  }))
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  const s1 = await stats(admin, db)
  const cpu = Object.fromEntries(Object.entries(pids).map(([k, v]) => [k, (cpuSeconds(v) - cpu0[k]) / seconds]))
  sampling = false
  await sampler
  await admin.end()
  await Promise.all(services.map(s => stop(s.child)))
  latencies.sort((a, b) => a - b)
  const ok = results.reduce((a, r) => a + r['2xx'], 0)
  const errors = results.reduce((a, r) => a + r.errors + r.timeouts + r.non2xx, 0)
  const commits = s1.commits - s0.commits
  const row = {
    route,
    instances: n,
    createsPerS: ok / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors,
    commitsPerS: commits / seconds,
    createsPerCommit: ok / Math.max(1, commits),
    walSyncsPerS: (s1.syncs - s0.syncs) / seconds,
    lockWaitersMean: waiting / Math.max(1, samples),
    cpu
  }
  log(`  ${route.padEnd(9)} ${n} instance(s): ${fmt(row.createsPerS)} creates/s  p50 ${fmt(row.p50, 1)} ms  p99 ${fmt(row.p99, 1)} ms  err ${errors}  ` +
    `${fmt(row.commitsPerS)} commits/s (${fmt(row.createsPerCommit, 1)} creates each)  ${fmt(row.walSyncsPerS)} WAL syncs/s  ` +
    `${fmt(row.lockWaitersMean, 2)} waiting for the lock  CPU service ${fmt(cpu.service * 100)}% postgres ${fmt(cpu.postgres * 100)}%` +
    (route === 'pgbouncer' ? ` pgbouncer ${fmt(cpu.pgbouncer * 100)}%` : ''))
  return row
}

/** fdatasync cost of the disk holding the cluster (pg_test_fsync), for the lock-hold bound. */
function fsyncCost () {
  const bin = join(findPgBin(), 'pg_test_fsync')
  if (!existsSync(bin)) return undefined
  const r = spawnSync(bin, ['-s', '1', '-f', join(session.tmp, 'fsync.test')], { encoding: 'utf8' })
  const m = /fdatasync\s+([\d.,]+) ops\/sec\s+([\d.,]+) usecs\/op/.exec(r.stdout)
  return m === null ? undefined : { opsPerS: Number(m[1].replace(',', '')), usPerOp: Number(m[2].replace(',', '')) }
}

const started = Date.now()
const load0 = loadavg()[0]
log(`bench scale: ${DURATION}s runs, ${CONNECTIONS} connections spread over the instances, ${cpus().length} cores, load average ${load0.toFixed(2)}`)
const cluster = session.own(await startCluster({ maxConnections: 200 }))
const bouncer = session.own(await startPgBouncer(cluster.url, { default_pool_size: 30 }))
const fsync = fsyncCost()
if (fsync !== undefined) log(`  fdatasync on this disk: ${fmt(fsync.opsPerS)} ops/s (${fmt(fsync.usPerOp)} µs each)`)
const rows = []
for (const route of ['direct', 'pgbouncer']) {
  for (const n of INSTANCES) rows.push(await run(route, n))
}
await bouncer.destroy(); session.disown(bouncer)
await cluster.destroy(); session.disown(cluster)
const load1 = loadavg()[0]

const env = { date: new Date().toISOString(), node: process.version, cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, durationSeconds: DURATION, connections: CONNECTIONS, loadAverageBefore: load0, loadAverageAfter: load1, fdatasync: fsync, totalSeconds: Math.round((Date.now() - started) / 1000) }
const md = [
  `Node ${env.node} · ${env.cpu} · ${env.cores} cores (PostgreSQL, PgBouncer, every instance and the load generator share them) · ${DURATION}s runs, ${CONNECTIONS} connections in all · load average ${load0.toFixed(1)} before, ${load1.toFixed(1)} after · ${env.date}` +
    (fsync !== undefined ? ` · fdatasync ${fmt(fsync.usPerOp)} µs` : ''),
  '',
  '| route | instances | creates/s | p50 ms | p99 ms | errors | commits/s | creates per commit | WAL syncs/s | waiting for the insert lock (mean) | CPU service | CPU PostgreSQL | CPU PgBouncer |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(r => `| ${r.route} | ${r.instances} | ${fmt(r.createsPerS)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${r.errors} | ${fmt(r.commitsPerS)} | ${fmt(r.createsPerCommit, 1)} | ${fmt(r.walSyncsPerS)} | ${fmt(r.lockWaitersMean, 2)} | ${fmt(r.cpu.service * 100)}% | ${fmt(r.cpu.postgres * 100)}% | ${r.route === 'pgbouncer' ? `${fmt(r.cpu.pgbouncer * 100)}%` : ''} |`),
  ''
].join('\n')
const outDir = join(ROOT, 'bench/results')
mkdirSync(outDir, { recursive: true })
writeFileSync(join(outDir, 'scaling.json'), JSON.stringify({ env, rows }, null, 2) + '\n')
writeFileSync(join(outDir, 'scaling.md'), md)
process.stdout.write('\n' + md)
log(`\nwritten: bench/results/scaling.json, bench/results/scaling.md (${env.totalSeconds}s)`)
process.exit(0)
