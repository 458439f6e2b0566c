// `npm run bench:pg-creates` — what one durable create costs on PostgreSQL, as scenario 8.3 runs it:
// the production build (`node dist/server.js`, info logs, auth, limits, metrics) pinned to core 0
// with PostgreSQL (and PgBouncer), 64 connections of `POST /v1/pets` at saturation from this process
// on core 1. Per variant: creates/s, the service's CPU per create, PostgreSQL's (postmaster and every
// backend) and PgBouncer's (from /proc schedstat), commits/s and creates per commit
// (pg_stat_database), WAL flushes/s (pg_stat_wal), p50/p99; and a raw node:http server answering
// the captured 201 and a GET from memory, for the ratios the bench's targets use.
//
// Compare builds or settings in one run, interleaved (so the same moment of a shared machine is in
// each): BENCH_CREATES_VARIANTS is a JSON array of { "label", "route": "direct" | "PgBouncer",
// "dist"?: a copy of dist/, "env"?: { VAR: value } }; the default is this build, directly and
// through PgBouncer. BENCH_CREATES_ROUNDS (3) rounds of BENCH_CREATES_SECONDS (3); medians.
// BENCH_CREATES_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' profiles the services.
import { spawnSync } from 'node:child_process'
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { startCluster } from '../scripts/pg-cluster.mjs'
import { startPgBouncer } from '../scripts/pgbouncer.mjs'
import { createDatabase, DIST, fmt, httpCall, log, percentile, requireBuild, ROOT, scratch, stop, waitReady, freePort } from './lib.mjs'
import { cpuMeter, serverPids } from './pg-reads-lib.mjs'

requireBuild()
const { hashApiKey } = await import(join(DIST, 'services/api-keys.js'))

const SECONDS = Number(process.env.BENCH_CREATES_SECONDS ?? 3)
const ROUNDS = Number(process.env.BENCH_CREATES_ROUNDS ?? 3)
const CONNECTIONS = 64
const VARIANTS = JSON.parse(process.env.BENCH_CREATES_VARIANTS ?? '[{"label":"this","route":"direct"},{"label":"this","route":"PgBouncer"}]')
const KEY = 'psk_' + 'c'.repeat(43)
const AUTH = { authorization: `Bearer ${KEY}` }
const POST = { method: 'POST', path: '/v1/pets', body: JSON.stringify({ name: 'Rex', categoryId: 42, status: 'pending' }), headers: { ...AUTH, 'content-type': 'application/json' } }

// Servers on core 0, this process (the load generator) on core 1, as `npm run bench` does.
const canPin = cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0
if (canPin) spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' })
// BENCH_CREATES_PG_CORE=1 puts PostgreSQL and PgBouncer with the load generator instead (for a profile of
// the service alone on its core: a write to a backend on the same core is otherwise charged the backend's run).
const pgCore = process.env.BENCH_CREATES_PG_CORE ?? '0'
const pinPid = (pid) => { if (canPin) spawnSync('taskset', ['-a', '-cp', pgCore, String(pid)], { stdio: 'ignore' }) }
const session = scratch('petstore-bench-creates-', { wrap: (cmd, args) => canPin ? ['taskset', ['-c', '0', cmd, ...args]] : [cmd, args] })

async function counters (admin, db) {
  const r = await admin.query(`SELECT d.xact_commit::bigint AS commits, w.wal_sync::bigint AS syncs
    FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = $1`, [db])
  return { commits: Number(r.rows[0].commits), syncs: Number(r.rows[0].syncs) }
}

/** One saturation run against `port`: requests, errors, latencies, and CPU ns of each group in `meters`. */
async function load (port, spec, seconds, meters = {}) {
  const latencies = []
  /** @type {Array<[string, () => number]>} */
  const started = Object.entries(meters).map(([k, find]) => [k, cpuMeter(find)])
  const inst = autocannon({ url: `http://127.0.0.1:${port}${spec.path}`, method: spec.method ?? 'GET', body: spec.body, headers: spec.headers, connections: CONNECTIONS, duration: seconds, timeout: 10 })
  inst.on('response', (_c, _s, _b, ms) => { latencies.push(ms) })
  const t0 = process.hrtime.bigint()
  const res = await inst
  const wall = Number(process.hrtime.bigint() - t0) / 1e9
  const ns = Object.fromEntries(started.map(([k, m]) => [k, m()]))
  latencies.sort((a, b) => a - b)
  return { n: res['2xx'], errors: res.errors + res.timeouts + res.non2xx, wall, ns, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

const load0 = loadavg()
log(`bench pg-creates: ${SECONDS}s × ${ROUNDS} rounds, ${CONNECTIONS} connections, load average ${load0.map(l => l.toFixed(2)).join(' ')}`)
const cluster = session.own(await startCluster())
pinPid(readFileSync(join(cluster.dir, 'postmaster.pid'), 'utf8').split('\n')[0])
const bouncer = session.own(await startPgBouncer(cluster.url))
const bouncerPid = Number(readFileSync(join(bouncer.dir, 'pgbouncer.pid'), 'utf8').trim())
pinPid(bouncerPid)
const admin = new pg.Client({ connectionString: cluster.url })
await admin.connect()

/** The production build in `dist` (default: this one), as `npm start` runs it, ready on /readyz. */
async function startVariant (name, dist, env) {
  const port = await freePort()
  const logFd = openSync(join(session.tmp, `${name}.log`), 'a')
  const child = session.spawn(process.execPath, [...(process.env.BENCH_CREATES_NODE_ARGS ?? '').split(' ').filter(Boolean), join(dist, 'server.js')], {
    cwd: ROOT,
    stdio: ['ignore', logFd, logFd],
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT_MAX: '1000000000', SHUTDOWN_DELAY_MS: '0', LOG_LEVEL: 'info', ...env }
  })
  closeSync(logFd)
  await waitReady(port, '/readyz', 30000, child)
  return { child, port }
}

const services = []
for (const [i, v] of VARIANTS.entries()) {
  const db = `creates_${i}`
  const direct = await createDatabase(cluster.url, db, hashApiKey(KEY))
  const url = v.route === 'PgBouncer' ? direct.replace(`:${cluster.port}/`, `:${bouncer.port}/`) : direct
  const env = v.env ?? {}
  const label = `${v.label} · ${v.route}${Object.keys(env).length > 0 ? ' · ' + Object.entries(env).map(([k, x]) => `${k}=${x}`).join(' ') : ''}`
  services.push({ ...await startVariant(`svc-${i}`, v.dist ?? DIST, { DATABASE_URL: url, ...env }), label, db, route: v.route })
}

// The baseline replays the service's own answers (a 201 and a GET of that pet) from memory.
const keep = (r) => Object.fromEntries(Object.entries(r.headers).filter(([k]) => !['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(k)))
const created = await httpCall(services[0].port, 'POST', POST.path, POST.headers, POST.body)
if (created.status !== 201) throw new Error(`create: ${created.status} ${created.body}`)
const petPath = `/v1/pets/${JSON.parse(created.body.toString()).id}`
const got = await httpCall(services[0].port, 'GET', petPath, AUTH)
const baseFile = join(session.tmp, 'baseline.json')
writeFileSync(baseFile, JSON.stringify([
  { method: 'POST', url: POST.path, status: created.status, headers: keep(created), body: created.body.toString('base64') },
  { method: 'GET', url: petPath, status: got.status, headers: keep(got), body: got.body.toString('base64') }
]))
const basePort = await freePort()
const base = session.spawn(process.execPath, [join(ROOT, 'bench/baseline.mjs'), String(basePort), baseFile], { stdio: ['ignore', 'ignore', 'inherit'] })
await waitReady(basePort, petPath, 10000)

const results = new Map()
const add = (k, v) => { if (!results.has(k)) results.set(k, []); results.get(k).push(v) }
for (const s of services) await load(s.port, POST, 1)
for (let round = 0; round < ROUNDS; round++) {
  for (const s of services) {
    const c0 = await counters(admin, s.db)
    const r = await load(s.port, POST, SECONDS, { service: () => [s.child.pid], pg: () => serverPids(cluster.dir), pooler: () => [bouncerPid] })
    const c1 = await counters(admin, s.db)
    if (r.errors > 0) throw new Error(`${s.label}: ${r.errors} errors`)
    add(s.label, {
      rps: r.n / r.wall,
      service: r.ns.service / 1e3 / r.n,
      pg: r.ns.pg / 1e3 / r.n,
      pooler: s.route === 'PgBouncer' ? r.ns.pooler / 1e3 / r.n : 0,
      commitsPerS: (c1.commits - c0.commits) / r.wall,
      perCommit: r.n / Math.max(1, c1.commits - c0.commits),
      syncsPerS: (c1.syncs - c0.syncs) / r.wall,
      p50: r.p50,
      p99: r.p99
    })
    log(`  ${s.label}: ${fmt(r.n / r.wall)} creates/s, service ${fmt(r.ns.service / 1e3 / r.n)} µs, PostgreSQL ${fmt(r.ns.pg / 1e3 / r.n)} µs per create`)
  }
  for (const [name, spec] of [['baseline POST', { ...POST }], ['baseline GET', { path: petPath, headers: AUTH }]]) {
    const r = await load(basePort, spec, SECONDS, { service: () => [base.pid] })
    add(name, { rps: r.n / r.wall, service: r.ns.service / 1e3 / r.n, pg: 0, pooler: 0, commitsPerS: 0, perCommit: 0, syncsPerS: 0, p50: r.p50, p99: r.p99 })
  }
}
await admin.end()
for (const s of services) await stop(s.child)
await stop(base)
await bouncer.destroy(); session.disown(bouncer)
await cluster.destroy(); session.disown(cluster)

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const getBase = median(results.get('baseline GET').map(r => r.rps))
const postBase = median(results.get('baseline POST').map(r => r.rps))
const lines = [
  `${cpus().length} cores · servers on core 0, load on core 1 · ${CONNECTIONS} connections × ${SECONDS}s × ${ROUNDS} rounds, medians · load average ${load0.map(l => l.toFixed(1)).join(' ')} before, ${loadavg().map(l => l.toFixed(1)).join(' ')} after · ${new Date().toISOString()}`,
  '',
  '| variant | creates/s | vs GET baseline | vs POST baseline | service µs/create | PostgreSQL µs/create | PgBouncer µs/create | commits/s | creates per commit | WAL flushes/s | p50 ms | p99 ms |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
]
for (const [k, rs] of results) {
  const m = (f) => median(rs.map(f))
  const isBase = k.startsWith('baseline')
  lines.push(`| ${k} | ${fmt(m(r => r.rps))} | ${isBase ? '' : fmt(m(r => r.rps) / getBase, 2)} | ${isBase ? '' : fmt(m(r => r.rps) / postBase, 2)} | ${fmt(m(r => r.service))} | ${isBase ? '' : fmt(m(r => r.pg))} | ${k.includes('PgBouncer') ? fmt(m(r => r.pooler)) : ''} | ${isBase ? '' : fmt(m(r => r.commitsPerS))} | ${isBase ? '' : fmt(m(r => r.perCommit), 1)} | ${isBase ? '' : fmt(m(r => r.syncsPerS))} | ${fmt(m(r => r.p50), 2)} | ${fmt(m(r => r.p99), 2)} |`)
}
process.stdout.write(lines.join('\n') + '\n')
process.exit(0)
