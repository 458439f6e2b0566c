// `npm run bench -- --only=mix` (and part of `npm run bench`): the realistic mix, where most reads
// miss the read cache. Many pets and the request stream of bench/mix-stream.mjs: eight API keys taken
// in turn, 65% getPet (ids Zipf-distributed with s = 1.1, or uniform), 25% listPets, 10% creates. Measured side by side with its limit, the same
// operations on an in-memory Map in a raw node:http process (bench/mix-limit.mjs), alternating
// A, B, A, B; then both at a fixed rate of 80% of the service's peak for the tail. The service is
// measured warm, as an instance that has been serving for a while: its warm-up lasts until the read
// cache is full or its pet hit rate has settled (at most WARM_MAX_S seconds); the limit holds every
// pet in memory from its start. Reported: req/s
// and CPU per request of each, their ratios, p99, the read cache's hit rate over the measured runs,
// and the service's peak RSS. MIX_PROFILE=1 also leaves a CPU profile of the uniform SQLite mix in
// bench/results/profiles/ and prints where its time goes.
import { spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { startCluster } from '../scripts/pg-cluster.mjs'
import { featureEnvs, startOtlpSink } from './otlp-sink.mjs'
import { createDatabase, DIST, fmt, freePort, log, makeStore, median, pinning, requireBuild, ROOT, scratch, startService, stop, waitReady } from './lib.mjs'
import { cacheCounters, hitRate, KEYS, loadMix, mixRequests, PETS, walks, WARM_MAX_S, warmUp } from './mix-stream.mjs'

requireBuild()
const { hashApiKey } = await import(join(DIST, 'services/api-keys.js'))
const { loadConfig } = await import(join(DIST, 'config/index.js'))
/** The read cache's budget the service runs with (READ_CACHE_MAX_MB's default), in MiB. */
const CACHE_MIB = loadConfig({}).readCacheMaxBytes / 1048576

const DURATION = Number(process.env.BENCH_DURATION ?? 4)
const BIG = Number(process.env.BENCH_BIG_STORE ?? 1_000_000)
const session = scratch('petstore-mix-', { wrap: pinning().wrap })
/** One measured run of a mix, DURATION seconds unless `opts` say otherwise. */
const load = (server, requests, opts = {}) => loadMix(server, requests, { duration: DURATION, ...opts })

// ---------------------------------------------------------------------------------------------
// Stores, preloaded directly (as bench/run.mjs does), with the eight keys.
async function sqliteStore (name, pets) {
  return `sqlite:${await makeStore(DIST, join(session.tmp, `${name}.db`), pets, KEYS)}`
}

async function pgStore (adminUrl, pets) {
  return await createDatabase(adminUrl, 'mix', hashApiKey(KEYS[0]), async (c) => {
    for (let i = 1; i < KEYS.length; i++) await c.query('INSERT INTO api_keys (name, key_hash, created_at) VALUES ($1, $2, now())', [`mix-${i}`, hashApiKey(KEYS[i])])
    await c.query(`INSERT INTO pets (name, category_id, status)
      SELECT convert_to('pet-' || x, 'UTF8'), x % 97, (ARRAY['available', 'pending', 'sold'])[(x % 3) + 1]
      FROM generate_series(1, $1::int) AS x`, [pets])
    await c.query('VACUUM ANALYZE')
  })
}

function peakRssMb (pid) {
  const r = spawnSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' })
  const m = /VmHWM:\s+(\d+) kB/.exec(r.stdout)
  return m === null ? NaN : Number(m[1]) / 1024
}

async function startLimit (pets) {
  const port = await freePort()
  const child = session.spawn(process.execPath, [join(ROOT, 'bench/mix-limit.mjs'), String(port), String(pets)], { stdio: ['ignore', 'ignore', 'inherit'] })
  await waitReady(port, '/v1/pets/1', 60000, child)
  return { name: 'limit', child, port }
}

/** Alternated service/limit pairs of saturation runs a mix is measured with. */
const PAIRS = Number(process.env.MIX_PAIRS ?? 5)

const rows = []
/**
 * One mix against the service and its limit: PAIRS alternated pairs of saturation runs (A, B, A,
 * B, …) with the same request stream, then both at 80% of the service's peak for the tail. The
 * ratios are the medians of the pairs' own ratios: the two runs of a pair are seconds apart, so a
 * slowdown of a shared machine lasting longer than a pair moves both, and one shorter than the
 * whole measurement moves a pair or two of five, not the median.
 */
async function compare (label, svc, limit, pets, dist, creates = true, extra = {}) {
  const [svcPages, limitPages] = [await walks(svc.port), await walks(limit.port)]
  const stream = (target, seed) => target === svc ? mixRequests(svcPages, pets, dist, seed, creates, extra) : mixRequests(limitPages, pets, dist, seed, creates)
  const warmSeconds = await warmUp(svc, seed => stream(svc, seed), CACHE_MIB * 1048576, WARM_MAX_S)
  await load(limit, stream(limit, 1), { duration: 2 })
  const before = await cacheCounters(svc)
  const s = []; const l = []
  for (let i = 0; i < PAIRS; i++) {
    s.push(await load(svc, stream(svc, 10 + i)))
    l.push(await load(limit, stream(limit, 10 + i)))
  }
  const after = await cacheCounters(svc)
  const sv = { rps: median(s.map(x => x.rps)), cpu: median(s.map(x => x.cpuUsPerReq)), p99: median(s.map(x => x.p99)), errors: s.reduce((a, x) => a + x.errors, 0) }
  const lv = { rps: median(l.map(x => x.rps)), cpu: median(l.map(x => x.cpuUsPerReq)), p99: median(l.map(x => x.p99)), errors: l.reduce((a, x) => a + x.errors, 0) }
  const pairCpuRatios = l.map((x, i) => x.cpuUsPerReq / s[i].cpuUsPerReq)
  const rate = Math.round(sv.rps * 0.8)
  const sf = await load(svc, stream(svc, 20), { rate })
  const lf = await load(limit, stream(limit, 20), { rate })
  const row = {
    label,
    service: sv,
    limit: lv,
    ratio: median(s.map((x, i) => x.rps / l[i].rps)),
    cpuRatio: median(pairCpuRatios),
    pairCpuRatios,
    fixedRate: rate,
    p99AtRate: { service: sf.p99, limit: lf.p99 },
    errors: sv.errors + sf.errors,
    petHitRate: hitRate(before, after, 'pet'),
    pageHitRate: hitRate(before, after, 'page'),
    warmUpSeconds: warmSeconds,
    cacheFill: (await cacheCounters(svc)).bytes / (CACHE_MIB * 1048576),
    peakRssMb: peakRssMb(svc.child.pid)
  }
  rows.push(row)
  log(`  ${label.padEnd(30)} service ${fmt(sv.rps)} req/s ${fmt(sv.cpu)} µs/req, limit ${fmt(lv.rps)} req/s ${fmt(lv.cpu)} µs/req → ${fmt(row.ratio, 2)} / ${fmt(row.cpuRatio, 2)} per CPU; p99 @${rate}/s ${fmt(sf.p99, 2)} vs ${fmt(lf.p99, 2)} ms; hits pet ${fmt(row.petHitRate * 100)}% page ${fmt(row.pageHitRate * 100)}% (warmed ${row.warmUpSeconds} s, cache ${fmt(row.cacheFill * 100)}% full); errors ${row.errors}; RSS ${fmt(row.peakRssMb)} MB`)
  return row
}

async function withService (name, env, fn) {
  const metricsPort = await freePort()
  const svc = { ...await startService(session, name, { LOG_LEVEL: 'info', METRICS_PORT: String(metricsPort), ...env }), metricsPort }
  try { return await fn(svc) } finally { await stop(svc.child) }
}

// ---------------------------------------------------------------------------------------------
const load0 = loadavg()
log(`realistic mix: ${PETS} pets (and ${BIG} on SQLite, uniform), 8 keys, ${DURATION} s runs; load average ${load0.map(x => x.toFixed(2)).join(' ')}`)

const limit = await startLimit(PETS)
const small = await sqliteStore('mix', PETS)
for (const dist of ['zipf', 'uniform']) {
  await withService(`sqlite-${dist}`, { DATABASE_URL: small }, svc => compare(`SQLite ${PETS / 1000}k, ${dist}`, svc, limit, PETS, dist))
}
// The Zipf mix with CORS on (an allowed Origin on every request) and with tracing on (spans to a local receiver).
const sink = await startOtlpSink()
for (const [feature, env] of Object.entries(featureEnvs(sink.url))) {
  await withService(`sqlite-zipf-${feature.replace(' ', '-')}`, { DATABASE_URL: small, ...env }, svc => compare(`SQLite ${PETS / 1000}k, zipf, ${feature}`, svc, limit, PETS, 'zipf', true, feature === 'CORS on' ? { origin: 'https://app.example' } : {}))
}
await sink.close()
if (process.env.MIX_FEATURES_ONLY === '1') process.exit(0)
// The same reads without the creates: how much of the distance to the limit the durable creates make.
for (const dist of ['zipf', 'uniform']) {
  await withService(`sqlite-${dist}-reads`, { DATABASE_URL: small }, svc => compare(`SQLite ${PETS / 1000}k, ${dist}, reads only`, svc, limit, PETS, dist, false))
}
if (process.env.MIX_PROFILE === '1') {
  const dir = join(ROOT, 'bench/results/profiles')
  mkdirSync(dir, { recursive: true })
  const name = `mix-uniform-${Date.now()}.cpuprofile`
  process.env.BENCH_NODE_ARGS = `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-name=${name}`
  await withService('sqlite-profile', { DATABASE_URL: small }, async svc => { await load(svc, mixRequests(await walks(svc.port), PETS, 'uniform', 30), { duration: 8 }) })
  delete process.env.BENCH_NODE_ARGS
  if (readdirSync(dir).includes(name)) spawnSync(process.execPath, [join(ROOT, 'bench/profile-summary.mjs'), join(dir, name)], { stdio: 'inherit' })
}
await stop(limit.child)

if (BIG > PETS) {
  const bigLimit = await startLimit(BIG)
  const big = await sqliteStore('mix-big', BIG)
  await withService('sqlite-big', { DATABASE_URL: big }, svc => compare(`SQLite ${BIG / 1000}k, uniform`, svc, bigLimit, BIG, 'uniform'))
  // The process without the read cache under the same mix: the base its memory is measured against.
  await withService('sqlite-big-nocache', { DATABASE_URL: big, READ_CACHE_MAX_MB: '0' }, svc => compare(`SQLite ${BIG / 1000}k, uniform, read cache off`, svc, bigLimit, BIG, 'uniform'))
  await stop(bigLimit.child)
}

const cluster = session.own(await startCluster())
const pgLimit = await startLimit(PETS)
const pgUrl = await pgStore(cluster.url, PETS)
for (const dist of ['zipf', 'uniform']) {
  await withService(`pg-${dist}`, { DATABASE_URL: pgUrl }, svc => compare(`PostgreSQL ${PETS / 1000}k, ${dist}`, svc, pgLimit, PETS, dist))
}
await stop(pgLimit.child)
await cluster.destroy()
session.disown(cluster)

const load1 = loadavg()
const byLabel = (prefix) => rows.find(r => r.label.startsWith(prefix))
const targets = [
  { name: 'SQLite, Zipf ids: per CPU', row: byLabel('SQLite'), bound: 0.6 },
  { name: 'SQLite, uniform ids: per CPU', row: rows.find(r => r.label.startsWith('SQLite') && r.label.endsWith('uniform')), bound: 0.55 },
  { name: 'PostgreSQL, Zipf ids: per CPU (service process)', row: byLabel('PostgreSQL'), bound: 0.55 }
].map(t => ({ name: t.name, value: t.row?.cpuRatio ?? NaN, bound: `≥ ${t.bound}`, met: (t.row?.cpuRatio ?? 0) >= t.bound && t.row?.errors === 0 }))
// Tracing's cost: the per-CPU ratios to the same limit, tracing off over on (drift between the two runs hits the limit too).
const plainZipf = byLabel('SQLite')
const tracedZipf = rows.find(r => r.label.endsWith('zipf, tracing on'))
if (plainZipf !== undefined && tracedZipf !== undefined) {
  const cost = plainZipf.cpuRatio / tracedZipf.cpuRatio - 1
  targets.push({ name: `SQLite, Zipf ids: tracing on costs ≤ 15% per CPU (service ${fmt(tracedZipf.service.cpu)} vs ${fmt(plainZipf.service.cpu)} µs/req)`, value: cost, bound: '≤ 0.15', met: cost <= 0.15 && tracedZipf.errors === 0 })
}
const loadText = (l) => l.map(x => x.toFixed(2)).join(' / ')
/** Peak RSS under the uniform mix on the big store, with the read cache (its default budget) and without. */
function memoryLine () {
  const on = rows.find(r => r.label === `SQLite ${BIG / 1000}k, uniform`)
  const off = rows.find(r => r.label === `SQLite ${BIG / 1000}k, uniform, read cache off`)
  if (on === undefined || off === undefined) return []
  return [`Memory, ${BIG} pets, uniform mix: peak RSS ${fmt(on.peakRssMb)} MB with the read cache (READ_CACHE_MAX_MB=${CACHE_MIB}, the default; ${fmt(on.cacheFill * 100)}% full at the end), ${fmt(off.peakRssMb)} MB with it off: the cache costs ${fmt(on.peakRssMb - off.peakRssMb)} MB of RSS for its ${CACHE_MIB} MiB budget.`, '']
}
const md = [
  `# Realistic mix (${process.version}, ${PETS} pets${BIG > PETS ? ` and ${BIG} on SQLite` : ''}, ${DURATION} s runs)`,
  '',
  `Load average (1 / 5 / 15 min): ${loadText(load0)} before, ${loadText(load1)} after.` +
    (load0[0] >= 1 ? ' **The machine was busy at the start (1-minute load average ≥ 1): not a quiet run.**' : ''),
  '',
  `Saturation figures: medians of ${PAIRS} alternated service/limit pairs of runs; the ratios are the medians of the pairs' ratios (per CPU: the pairs' range in brackets).`,
  '',
  '| mix | service req/s | limit req/s | req/s ratio | CPU µs/req (service vs limit) | ratio per CPU (pairs) | p99 at 80% of peak (service vs limit) | pet / page hit rate | warm-up, cache fill | errors | peak RSS |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(r => `| ${r.label} | ${fmt(r.service.rps)} | ${fmt(r.limit.rps)} | ${fmt(r.ratio, 2)} | ${fmt(r.service.cpu)} vs ${fmt(r.limit.cpu)} | ${fmt(r.cpuRatio, 2)} (${fmt(Math.min(...r.pairCpuRatios), 2)}–${fmt(Math.max(...r.pairCpuRatios), 2)}) | ${fmt(r.p99AtRate.service, 2)} vs ${fmt(r.p99AtRate.limit, 2)} ms | ${fmt(r.petHitRate * 100)}% / ${fmt(r.pageHitRate * 100)}% | ${r.warmUpSeconds} s, ${fmt(r.cacheFill * 100)}% | ${r.errors} | ${fmt(r.peakRssMb)} MB |`),
  '',
  '| target | measured | bound | met |',
  '|---|---:|---:|:-:|',
  ...targets.map(t => `| ${t.name} | ${fmt(t.value, 2)} | ${t.bound} | ${t.met ? 'yes' : '**no**'} |`),
  '',
  ...memoryLine(),
].join('\n')
const out = join(ROOT, 'bench/results')
mkdirSync(out, { recursive: true })
writeFileSync(join(out, 'latest-mix.json'), JSON.stringify({ node: process.version, loadBefore: load0, loadAfter: load1, pets: PETS, big: BIG, duration: DURATION, rows, targets }, null, 2) + '\n')
writeFileSync(join(out, 'latest-mix.md'), md)
process.stdout.write('\n' + md)
log('\nwritten: bench/results/latest-mix.json, bench/results/latest-mix.md')
