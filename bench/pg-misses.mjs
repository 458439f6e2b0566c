// `npm run bench:pg-misses` — what a read-cache miss costs on PostgreSQL, end to end: the production
// build (`node dist/server.js`, info logs, auth, limits, metrics) with the read cache off
// (READ_CACHE_MAX_MB=0), over a 1M-pet database, at a fixed, modest rate (BENCH_MISSES_RATE, 400/s)
// from 16 connections: getPet of random ids, and listPets `limit=20` pages after random cursors
// (plain and `status=sold`; 20,000 distinct cursors, so the cursor memo misses too). Reported per
// request: the service's CPU, PostgreSQL's (postmaster and backends) and PgBouncer's, from /proc
// schedstat, p50/p99 latency; and a raw node:http server answering bytes of the same shape, for
// the CPU ratio. Directly and through PgBouncer (transaction mode); BENCH_MISSES_ROUNDS (2) rounds
// of BENCH_MISSES_SECONDS (6), interleaved, medians.
//
// Compare builds or settings in one run (so the same moment of a shared machine is in both):
// BENCH_MISSES_VARIANTS is a JSON array of { "label", "route": "direct" | "PgBouncer", "dist"?: a
// copy of dist/, "env"?: { VAR: value } }; the default is this build, directly and through PgBouncer.
// A "hit" row (this build, cache on, one URL repeated) shows what the same request costs when the
// cache answers. BENCH_MISSES_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' profiles the services.
import { spawn } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'
import { startCluster } from '../scripts/pg-cluster.mjs'
import { startPgBouncer } from '../scripts/pgbouncer.mjs'
import { cpuMeter, makePetsDb, percentile, serverPids } from './pg-reads-lib.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const DIST = join(ROOT, 'dist')
const { migratePostgres } = await import(join(DIST, 'store/postgres/migrations.js')).catch(() => {
  process.stderr.write('bench: dist/ is missing; run `npm run build` first\n')
  process.exit(2)
})
const { hashApiKey } = await import(join(DIST, 'services/api-keys.js'))
const { CursorCodec } = await import(join(DIST, 'services/cursor.js'))

const RATE = Number(process.env.BENCH_MISSES_RATE ?? 400)
const SECONDS = Number(process.env.BENCH_MISSES_SECONDS ?? 6)
const ROUNDS = Number(process.env.BENCH_MISSES_ROUNDS ?? 2)
const PETS = Number(process.env.BENCH_MISSES_PETS ?? 1_000_000)
const VARIANTS = JSON.parse(process.env.BENCH_MISSES_VARIANTS ?? '[{"label":"this","route":"direct"},{"label":"this","route":"PgBouncer"}]')
const KEY = 'psk_' + 'b'.repeat(43)
const AUTH = { authorization: `Bearer ${KEY}` }
const CURSORS = 20_000

const tmp = mkdtempSync(join(tmpdir(), 'petstore-misses-'))
const children = new Set()
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); rmSync(tmp, { recursive: true, force: true }) })
process.on('SIGINT', () => process.exit(130))
process.on('SIGTERM', () => process.exit(143))
const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))

async function freePort () {
  return await new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => { const { port } = /** @type {import('node:net').AddressInfo} */ (s.address()); s.close(() => resolve(port)) })
  })
}

function get (port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function waitReady (port, path) {
  const end = Date.now() + 60_000
  for (;;) {
    try { if ((await get(port, path)).status === 200) return } catch {}
    if (Date.now() > end) throw new Error(`no 200 from ${path} on port ${port}`)
    await sleep(20)
  }
}

async function startProcess (args, env, readyPath) {
  const port = await freePort()
  const logFd = openSync(join(tmp, `${port}.log`), 'a')
  const child = spawn(process.execPath, args(port), { cwd: ROOT, stdio: ['ignore', logFd, logFd], env: { PATH: process.env.PATH, ...env(port) } })
  closeSync(logFd)
  children.add(child)
  child.on('exit', () => children.delete(child))
  await waitReady(port, readyPath)
  return { child, port }
}

async function stop (child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

const startService = (dist, databaseUrl, env) => startProcess(
  () => [...(process.env.BENCH_MISSES_NODE_ARGS ?? '').split(' ').filter(Boolean), join(dist, 'server.js')],
  (port) => ({ HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', RATE_LIMIT_MAX: '1000000000', READ_CACHE_MAX_MB: '0', DATABASE_URL: databaseUrl, ...env }),
  '/readyz')

/**
 * One fixed-rate autocannon run over `paths` (cycled): CPU nanoseconds of each group of processes in
 * `meters` ({ name: () => pids }), latencies per response.
 */
async function run (port, paths, meters = {}) {
  const latencies = []
  let i = 0
  /** @type {Array<[string, () => number]>} */
  const started = Object.entries(meters).map(([k, find]) => [k, cpuMeter(find)])
  const inst = autocannon({
    url: `http://127.0.0.1:${port}`,
    headers: AUTH,
    connections: 16,
    duration: SECONDS,
    overallRate: RATE,
    timeout: 10,
    requests: [{ setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length] }) }]
  })
  inst.on('response', (_c, _s, _b, ms) => { latencies.push(ms) })
  const res = await inst
  const ns = Object.fromEntries(started.map(([k, m]) => [k, m()]))
  latencies.sort((a, b) => a - b)
  return { n: res.requests.total, errors: res.errors + res.timeouts + res.non2xx, ns, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

const cluster = await startCluster()
const bouncer = await startPgBouncer(cluster.url)
try {
  const t = Date.now()
  const url = await makePetsDb(pg, cluster.url, 'misses', PETS, migratePostgres)
  const c = new pg.Client({ connectionString: url })
  c.on('error', () => {})
  await c.connect()
  await c.query('INSERT INTO api_keys (name, key_hash, created_at) VALUES ($1, $2, now())', ['bench', hashApiKey(KEY)])
  process.stderr.write(`${PETS} pets in ${Date.now() - t} ms\n`)
  const bouncerUrl = url.replace(`:${cluster.port}/`, `:${bouncer.port}/`)
  const bouncerPid = Number(readFileSync(join(bouncer.dir, 'pgbouncer.pid'), 'utf8').trim())

  const services = []
  for (const v of VARIANTS) {
    const env = v.env ?? {}
    const label = `${v.label} · ${v.route}${Object.keys(env).length ? ' · ' + Object.entries(env).map(([k, x]) => `${k}=${x}`).join(' ') : ''}`
    services.push({ label, route: v.route, ...await startService(v.dist ?? DIST, v.route === 'PgBouncer' ? bouncerUrl : url, env) })
  }
  const hit = { label: 'hit (cache on, one URL)', route: 'direct', ...await startService(DIST, url, { READ_CACHE_MAX_MB: '64' }) }
  // The cursor key exists once a service started (first start creates it).
  const secret = (await c.query("SELECT value FROM settings WHERE name = 'cursor_hmac_key'")).rows[0].value
  await c.end()
  const codec = new CursorCodec(Buffer.from(secret, 'hex'))
  const rnd = (n) => 1 + Math.floor(Math.random() * n)
  const workloads = {
    'getPet (random id)': Array.from({ length: 50_000 }, () => `/v1/pets/${rnd(PETS)}`),
    'list limit=20 (random cursor)': Array.from({ length: CURSORS }, () => `/v1/pets?limit=20&cursor=${codec.encode(BigInt(rnd(PETS - 100)), undefined)}`),
    'list limit=20 status=sold (random cursor)': Array.from({ length: CURSORS }, () => `/v1/pets?limit=20&status=sold&cursor=${codec.encode(BigInt(rnd(PETS - 100)), 'sold')}`)
  }
  // BENCH_MISSES_ONLY=list keeps the workloads whose name contains it.
  for (const w of Object.keys(workloads)) if (process.env.BENCH_MISSES_ONLY && !w.includes(process.env.BENCH_MISSES_ONLY)) delete workloads[w]
  // The baseline answers one captured response of each workload's shape, from memory.
  const baseResponses = []
  for (const paths of Object.values(workloads)) {
    const r = await get(services[0].port, paths[0], AUTH)
    if (r.status !== 200) throw new Error(`${paths[0]}: ${r.status} ${r.body}`)
    const headers = Object.fromEntries(Object.entries(r.headers).filter(([k]) => !['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(k)))
    baseResponses.push({ method: 'GET', url: paths[0], status: r.status, headers, body: r.body.toString('base64') })
  }
  const baseFile = join(tmp, 'baseline.json')
  writeFileSync(baseFile, JSON.stringify(baseResponses))
  const base = await startProcess((port) => [join(ROOT, 'bench/baseline.mjs'), String(port), baseFile], () => ({}), baseResponses[0].url)

  const results = new Map()
  const add = (k, v) => { if (!results.has(k)) results.set(k, []); results.get(k).push(v) }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [w, paths] of Object.entries(workloads)) {
      for (const s of services) {
        if (round === 0) await run(s.port, paths.slice(0, 2000))
        const r = await run(s.port, paths, { service: () => [s.child.pid], pg: () => serverPids(cluster.dir), pooler: () => [bouncerPid] })
        if (r.errors > 0) throw new Error(`${w} · ${s.label}: ${r.errors} errors`)
        add(`${w} · ${s.label}`, { ...r, service: r.ns.service / 1e3 / r.n, pg: r.ns.pg / 1e3 / r.n, pooler: s.route === 'PgBouncer' ? r.ns.pooler / 1e3 / r.n : 0 })
        process.stderr.write('.')
      }
      const h = await run(hit.port, [paths[0]], { service: () => [hit.child.pid], pg: () => serverPids(cluster.dir) })
      add(`${w} · ${hit.label}`, { ...h, service: h.ns.service / 1e3 / h.n, pg: h.ns.pg / 1e3 / h.n, pooler: 0 })
      const b = await run(base.port, [paths[0]], { service: () => [base.child.pid] })
      add(`${w} · baseline`, { ...b, service: b.ns.service / 1e3 / b.n, pg: 0, pooler: 0 })
    }
  }
  process.stderr.write('\n')
  for (const s of [...services, hit]) await stop(s.child)
  await stop(base.child)

  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const lines = [
    `${cpus().length} cores · ${RATE} req/s × ${SECONDS}s × ${ROUNDS} rounds, 16 connections, ${PETS} pets, READ_CACHE_MAX_MB=0 · load average ${loadavg().map(l => l.toFixed(1)).join(' ')} · ${new Date().toISOString()}`,
    '',
    '| workload · build · route | service µs/req | PostgreSQL µs/req | PgBouncer µs/req | total µs/req | CPU ratio (baseline ÷ service) | p50 ms | p99 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|'
  ]
  for (const [k, rs] of results) {
    const m = (f) => median(rs.map(f))
    const baseUs = median(results.get(`${k.split(' · ')[0]} · baseline`).map(r => r.service))
    const svcUs = m(r => r.service)
    lines.push(`| ${k} | ${svcUs.toFixed(0)} | ${m(r => r.pg) ? m(r => r.pg).toFixed(0) : ''} | ${m(r => r.pooler) ? m(r => r.pooler).toFixed(0) : ''} | ${m(r => r.service + r.pg + r.pooler).toFixed(0)} | ${k.endsWith('baseline') ? '' : (baseUs / svcUs).toFixed(2)} | ${m(r => r.p50).toFixed(2)} | ${m(r => r.p99).toFixed(2)} |`)
  }
  process.stdout.write(lines.join('\n') + '\n')
} finally {
  await bouncer.destroy()
  await cluster.destroy()
}
