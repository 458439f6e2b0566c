// `npm run bench:scale` — scenario 9, write scaling: creates/s and p99 with 1, 2 and 3 instances of
// the production build (dist/server.js) over one throwaway PostgreSQL, directly and through PgBouncer
// (transaction mode, stock startup-parameter policy), plus what bounds it: commits per second and
// creates per commit (group commit), WAL flushes, how many transactions wait for the insert lock
// (sampled from pg_locks), and the CPU each component used. Loopback only, bounded (~1 min with the
// defaults; BENCH_SCALE_DURATION seconds per run). Writes bench/results/scaling.{json,md}.
// See docs/performance.md (write scaling) and docs/scaling.md.
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'
import { startCluster, findPgBin } from '../scripts/pg-cluster.mjs'
import { startPgBouncer } from '../scripts/pgbouncer.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const DIST = join(ROOT, 'dist')
if (!existsSync(join(DIST, 'server.js'))) {
  process.stderr.write('bench: dist/ is missing; run `npm run build` first (the bench measures the production build)\n')
  process.exit(2)
}
const { migratePostgres } = await import(join(DIST, 'store/postgres/migrations.js'))
const { hashApiKey } = await import(join(DIST, 'services/api-keys.js'))

const DURATION = Number(process.env.BENCH_SCALE_DURATION ?? 5)
// The same offered load for every instance count: CONNECTIONS clients in all, spread evenly.
const CONNECTIONS = Number(process.env.BENCH_SCALE_CONNECTIONS ?? 48)
const INSTANCES = [1, 2, 3]
const KEY = 'psk_' + 's'.repeat(43)
const POST = { method: 'POST', body: JSON.stringify({ name: 'Rex', categoryId: 42, status: 'pending' }), headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' } }

const log = (msg) => process.stderr.write(`${msg}\n`)
const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))
const fmt = (n, d = 0) => Number.isFinite(n) ? n.toFixed(d) : '–'

const tmp = mkdtempSync(join(tmpdir(), 'petstore-bench-scale-'))
const children = new Set()
let cluster
let bouncer
function cleanup () {
  for (const c of children) c.kill('SIGKILL')
  rmSync(tmp, { recursive: true, force: true })
  // 'exit' allows no awaiting: the throwaway cluster and pooler are stopped synchronously.
  if (bouncer !== undefined) {
    try { process.kill(Number(readFileSync(join(bouncer.dir, 'pgbouncer.pid'), 'utf8')), 'SIGTERM') } catch {}
    rmSync(bouncer.dir, { recursive: true, force: true })
  }
  if (cluster !== undefined) {
    const pgCtl = [join(findPgBin(), 'pg_ctl'), 'stop', '-D', cluster.dir, '-m', 'immediate', '-w']
    const asRoot = typeof process.getuid === 'function' && process.getuid() === 0
    spawnSync(asRoot ? 'runuser' : pgCtl[0], asRoot ? ['-u', 'postgres', '--', ...pgCtl] : pgCtl.slice(1), { stdio: 'ignore' })
    rmSync(dirname(cluster.dir), { recursive: true, force: true })
  }
}
process.on('exit', cleanup)
process.on('SIGINT', () => process.exit(130))
process.on('SIGTERM', () => process.exit(143))

async function freePort () {
  return await new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => { const { port } = /** @type {import('node:net').AddressInfo} */ (s.address()); s.close(() => resolve(port)) })
  })
}

function ready (port) {
  return new Promise(resolve => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', agent: false }, res => { res.resume(); resolve(res.statusCode === 200) })
    req.on('error', () => resolve(false))
    req.end()
  })
}

async function startService (name, databaseUrl) {
  const port = await freePort()
  const logFd = openSync(join(tmp, `${name}.log`), 'a')
  const child = spawn(process.execPath, [join(DIST, 'server.js')], {
    cwd: ROOT,
    stdio: ['ignore', logFd, logFd],
    // One API key drives all the load: its rate limit is raised out of reach. Overload shedding is
    // off: this measures how far creates go, not when the service starts refusing them.
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl, RATE_LIMIT_MAX: '1000000000', EVENT_LOOP_MAX_DELAY_MS: '0' }
  })
  closeSync(logFd)
  children.add(child)
  child.on('exit', () => children.delete(child))
  for (let waited = 0; !(await ready(port)); waited += 20) {
    if (waited > 30000 || child.exitCode !== null) throw new Error(`${name} did not become ready: ${readFileSync(join(tmp, `${name}.log`), 'utf8').slice(-2000)}`)
    await sleep(20)
  }
  return { name, child, port }
}

async function stop (child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  await Promise.race([exited, sleep(15000)])
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

/** utime + stime (all threads) of the given pids, in seconds. */
function cpuSeconds (pids) {
  let ticks = 0
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
      ticks += Number(f[11]) + Number(f[12])
    } catch {}
  }
  return ticks / 100
}

/** The postmaster and its children (backends, WAL writer, checkpointer…). */
function postgresPids () {
  const postmaster = Number(readFileSync(join(cluster.dir, 'postmaster.pid'), 'utf8').split('\n')[0])
  const kids = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' }).split('\n').map(Number).filter(n => n > 0)
  return [postmaster, ...kids]
}

function bouncerPids () {
  try { return [Number(readFileSync(join(bouncer.dir, 'pgbouncer.pid'), 'utf8'))] } catch { return [] }
}

function percentile (sorted, p) {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)]
}

async function stats (admin, db) {
  const r = await admin.query(`SELECT d.xact_commit::bigint AS commits, w.wal_sync::bigint AS syncs, w.wal_bytes::bigint AS wal
    FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = $1`, [db])
  return { commits: Number(r.rows[0].commits), syncs: Number(r.rows[0].syncs), wal: Number(r.rows[0].wal) }
}

/** A fresh database migrated by the service's own migrations, with the bench key. */
async function makeDatabase (name) {
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(cluster.url)
  url.pathname = `/${name}`
  const c = new pg.Client({ connectionString: url.href })
  await c.connect()
  await migratePostgres(c)
  await c.query('INSERT INTO api_keys (name, key_hash, created_at) VALUES ($1, $2, now())', ['bench', hashApiKey(KEY)])
  await c.end()
  return url.href
}

async function run (route, n) {
  const db = `scale_${route}_${n}`
  const direct = await makeDatabase(db)
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
  const pids = { service: services.map(s => s.child.pid), postgres: postgresPids(), pgbouncer: route === 'pgbouncer' ? bouncerPids() : [] }
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
  const r = spawnSync(bin, ['-s', '1', '-f', join(tmp, 'fsync.test')], { encoding: 'utf8' })
  const m = /fdatasync\s+([\d.,]+) ops\/sec\s+([\d.,]+) usecs\/op/.exec(r.stdout)
  return m === null ? undefined : { opsPerS: Number(m[1].replace(',', '')), usPerOp: Number(m[2].replace(',', '')) }
}

const started = Date.now()
const load0 = loadavg()[0]
log(`bench scale: ${DURATION}s runs, ${CONNECTIONS} connections spread over the instances, ${cpus().length} cores, load average ${load0.toFixed(2)}`)
cluster = await startCluster({ maxConnections: 200 })
bouncer = await startPgBouncer(cluster.url, { default_pool_size: 30 })
const fsync = fsyncCost()
if (fsync !== undefined) log(`  fdatasync on this disk: ${fmt(fsync.opsPerS)} ops/s (${fmt(fsync.usPerOp)} µs each)`)
const rows = []
for (const route of ['direct', 'pgbouncer']) {
  for (const n of INSTANCES) rows.push(await run(route, n))
}
await bouncer.destroy(); bouncer = undefined
await cluster.destroy(); cluster = undefined
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
