// `npm run bench`: the service (production build in dist/, as `npm start` runs it) side by side with
// a raw node:http baseline answering the same bytes from memory. Loopback only, bounded (a full run with
// the mix takes about half an hour).
// See docs/explanation/performance.md for what each scenario means and how to read the table.
// `npm run bench -- --only=pg` (or BENCH_ONLY=pg) runs scenario 8 (PostgreSQL) alone; `--only=cold`
// runs scenario 7 (cold start on a 1M-pet store, next to a bare node:http process) alone; `--only=reads`
// runs the read scenarios 1–2 and 8.1–8.2 alone (several minutes), for work on the hot path;
// `--only=mix` runs the realistic mix (bench/mix.mjs, where most reads miss the cache) alone;
// `--only=compress` runs scenario 9 (a cached 100-pet page, identity next to gzip) alone. A full
// run ends with the mix. `npm run bench -- --compare <git ref>` measures this build against the
// build of another commit instead (bench/compare.mjs).
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { startCluster } from '../scripts/pg-cluster.mjs'
import { featureEnvs, SAMPLED_10, startOtlpSink } from './otlp-sink.mjs'
import { AUTH, CREATE, cpuSeconds, createDatabase, DIST, fmt, freePort, httpCall, KEY, LIST, log, makeStore as makeStoreIn, measure, median, PET, pinning, requireBuild, ROOT, scratch, startService as startProcess, stop, waitReady } from './lib.mjs'

if (process.argv.some(a => a === '--compare' || a.startsWith('--compare='))) process.exit(spawnSync(process.execPath, [join(ROOT, 'bench/compare.mjs'), ...process.argv.slice(2)], { stdio: 'inherit' }).status ?? 1)
requireBuild()
const { openSqlite } = await import(join(DIST, 'store/sqlite/connection.js'))
const { hashApiKey } = await import(join(DIST, 'services/api-keys.js'))
const { CursorCodec } = await import(join(DIST, 'services/cursor.js'))

const ONLY = (process.argv.find(a => a.startsWith('--only='))?.slice(7) ?? process.env.BENCH_ONLY ?? 'all')
if (!['all', 'pg', 'cold', 'reads', 'mix', 'compress'].includes(ONLY)) {
  process.stderr.write(`bench: --only=${ONLY} is not known (all, pg, cold, reads, mix, compress)\n`)
  process.exit(2)
}
if (ONLY === 'mix') process.exit(spawnSync(process.execPath, [join(ROOT, 'bench/mix.mjs')], { stdio: 'inherit' }).status ?? 1)

// Seconds per saturation / fixed-rate run; BENCH_DURATION shortens it for a smoke run.
const DURATION = Number(process.env.BENCH_DURATION ?? 4)
const WARMUP = Math.max(1, Math.round(DURATION * 0.4))
// Scenario 8 (PostgreSQL) runs are shorter, to keep the whole bench short.
const PG_DURATION = Number(process.env.BENCH_PG_DURATION ?? Math.max(1, Math.round(DURATION / 2)))
const CONNECTIONS = 64
const BIG = Number(process.env.BENCH_BIG_STORE ?? 1_000_000)
const SMALL = 1000

// ---------------------------------------------------------------------------------------------
// CPU pinning: servers on core 0, this process (the load generator) on core 1.
const coreCount = cpus().length
const { canPin, wrap } = pinning()

const session = scratch('petstore-bench-', { wrap })
const tmp = session.tmp

// ---------------------------------------------------------------------------------------------
// Stores: preloaded straight into the SQLite file before the service starts (lib.mjs, makeStore).
const makeStore = (name, pets) => makeStoreIn(DIST, join(tmp, `${name}.db`), pets, [KEY])

function cursorFor (dbPath, afterId, status) {
  const db = openSqlite(dbPath, 'FULL')
  const secret = db.prepare("SELECT value FROM settings WHERE name = 'cursor_hmac_key'").get().value
  db.close()
  return new CursorCodec(Buffer.from(secret, 'hex')).encode(BigInt(afterId), status)
}

// ---------------------------------------------------------------------------------------------
// Processes.
/**
 * The production service as `npm start` runs it (info-level JSON logs, here to a file). With
 * `metrics`, its Prometheus listener is on too (METRICS_PORT), for the read-cache counters;
 * `storeOptions` are the store's options users cannot set (startServer's second argument).
 * @param {string} name
 * @param {string} dbPath
 * @param {Record<string, string>} [env]
 * @param {{ metrics?: boolean, storeOptions?: { sqliteSynchronous?: string } }} [opts]
 */
async function startService (name, dbPath, env = {}, { metrics = false, storeOptions } = {}) {
  const metricsPort = metrics ? await freePort() : undefined
  const svc = await startProcess(session, name, { DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'info', ...(metricsPort === undefined ? {} : { METRICS_PORT: String(metricsPort) }), ...env }, storeOptions)
  return { ...svc, metricsPort }
}

/**
 * The read cache's counters from the service's own /metrics (hits and misses by kind since the
 * service started, entries and bytes now), with the hit rate of each kind.
 */
async function readCacheStats (service) {
  const r = await httpCall(service.metricsPort, 'GET', '/metrics')
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`)
  const value = (name, kind) => {
    const line = r.body.toString().split('\n').find(l => l.startsWith(kind === undefined ? `${name} ` : `${name}{kind="${kind}"} `))
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  const kinds = {}
  for (const kind of ['pet', 'page']) {
    const hits = value('petstore_read_cache_hits_total', kind)
    const misses = value('petstore_read_cache_misses_total', kind)
    kinds[kind] = { hits, misses, hitRate: hits + misses === 0 ? NaN : hits / (hits + misses) }
  }
  return { ...kinds, entries: value('petstore_read_cache_entries'), bytes: value('petstore_read_cache_bytes') }
}

/** The raw node:http baseline; with `fastify`, the same bytes from a bare Fastify app (the framework's floor, reported only). */
async function startBaseline (responses, framework) {
  const port = await freePort()
  const file = join(tmp, `baseline-${port}.json`)
  writeFileSync(file, JSON.stringify(responses))
  const child = session.spawn(process.execPath, [join(ROOT, 'bench/baseline.mjs'), String(port), file, ...(framework === undefined ? [] : [framework])], { stdio: ['ignore', 'ignore', 'inherit'] })
  await waitReady(port, responses[0].url, 10000)
  return framework === undefined ? { name: 'baseline', child, port, kind: 'baseline' } : { name: `bare ${framework}`, child, port, kind: 'floor' }
}

/** The 200 answers of the service to GETs of `urls`, for a baseline to replay. */
async function okAnswers (service, urls, headers) {
  const answers = []
  for (const url of urls) {
    const a = await capture(service, 'GET', url, headers)
    if (a.status !== 200) throw new Error(`${service.name} answered GET ${url} with ${a.status}, not 200`)
    answers.push(a)
  }
  return answers
}

/** Asks the service once and keeps its answer, so the baseline can replay the very same bytes. */
async function capture (service, method, url, headers, body) {
  const r = await httpCall(service.port, method, url, headers, body)
  const keep = {}
  for (const [k, v] of Object.entries(r.headers)) {
    if (!['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(k)) keep[k] = v
  }
  return { method, url, status: r.status, headers: keep, body: r.body.toString('base64') }
}

function peakRssMb (pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m === null ? NaN : Number(m[1]) / 1024
}

// ---------------------------------------------------------------------------------------------
// Load.
/**
 * @typedef {{ path: string, method?: string, headers?: Record<string, string>, body?: string, connections?: number, duration?: number, rate?: number }} LoadSpec
 */

/** One autocannon run (lib.mjs, measure) with this bench's defaults. @param {any} server @param {LoadSpec} spec */
function load (server, { method = 'GET', headers = AUTH, connections = CONNECTIONS, duration = DURATION, ...rest }) {
  return measure(server, { method, headers, connections, duration, ...rest })
}

const rows = []
function record (scenario, server, mode, r, extra = {}) {
  const row = { scenario, server, mode, ...r, ...extra }
  rows.push(row)
  log(`  ${scenario.padEnd(28)} ${server.padEnd(18)} ${mode.padEnd(10)} ${fmt(r.rps, 0).padStart(7)} req/s  p50 ${fmt(r.p50, 2)} ms  p99 ${fmt(r.p99, 2)} ms  err ${r.errors}  cpu ${fmt(r.cpu * 100, 0)}% ${fmt(r.cpuUsPerReq, 0)} µs/req`)
  return row
}
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
/** One row of several runs: each figure their `centre` (mean or median), errors summed. */
function combine (runs, centre = mean) {
  return {
    rps: centre(runs.map(r => r.rps)),
    p50: centre(runs.map(r => r.p50)),
    p99: centre(runs.map(r => r.p99)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    cpu: centre(runs.map(r => r.cpu)),
    cpuUsPerReq: centre(runs.map(r => r.cpuUsPerReq))
  }
}

async function warm (server, spec) {
  await load(server, { ...spec, duration: Math.min(WARMUP, spec.duration ?? WARMUP) })
}

/**
 * Alternated pairs of saturation runs per side-by-side comparison. On a shared machine the CPU per
 * request of one process moves by tens of percent within seconds (neighbours on the same cores):
 * five pairs keep one bad pair from deciding a median.
 */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 5)
/**
 * PAIRS saturation runs alternating A, B, A, B… (so drift on a shared machine hits both), then a
 * fixed-rate run of each at half of A's peak for latency percentiles. Rows are medians of the runs;
 * the ratios are the medians of the pairs' ratios, their range kept in `pairs`.
 */
async function sideBySide (scenario, a, specA, b, specB) {
  await warm(a, specA)
  await warm(b, specB)
  const ra = []; const rb = []
  for (let i = 0; i < PAIRS; i++) {
    ra.push(await load(a, specA))
    rb.push(await load(b, specB))
  }
  const sa = record(scenario, a.name, 'saturate', combine(ra, median))
  const sb = record(scenario, b.name, 'saturate', combine(rb, median))
  const rate = Math.max(100, Math.round(sa.rps / 2))
  const fa = record(scenario, a.name, `fixed@${rate}`, await load(a, { ...specA, rate }))
  const fb = record(scenario, b.name, `fixed@${rate}`, await load(b, { ...specB, rate }))
  const rpsRatios = ra.map((r, i) => r.rps / rb[i].rps)
  const cpuRatios = ra.map((r, i) => rb[i].cpuUsPerReq / r.cpuUsPerReq)
  const pairs = { rps: [Math.min(...rpsRatios), Math.max(...rpsRatios)], cpu: [Math.min(...cpuRatios), Math.max(...cpuRatios)] }
  if (b.kind === 'baseline') {
    sa.ratio = median(rpsRatios)
    sa.cpuRatio = median(cpuRatios)
    sa.pairs = pairs
  }
  return { sa, sb, fa, fb, rate, pairs, ratio: median(rpsRatios), cpuRatio: median(cpuRatios) }
}
/** The `how` of a per-CPU target: the pairs' range. */
const perCpuHow = (s, what = 'server CPU µs/req baseline / service') => `${what}; median of ${PAIRS} alternated pairs (${fmt(s.pairs.cpu[0], 2)}–${fmt(s.pairs.cpu[1], 2)})`

/**
 * Scenario 4's shape. Fixed rate: reads at 90% and creates at 10% of half the list peak, on separate
 * connections, so read latency is measured alone; compared with the same read rate and no writes.
 */
async function mixed (label, svc, mixRate, duration = DURATION) {
  const readSpec = { path: LIST, rate: Math.round(mixRate * 0.9), connections: 58, duration }
  const writeSpec = { ...CREATE, rate: Math.round(mixRate * 0.1), connections: 6, duration }
  const readOnly = []; const mixedReads = []; const mixedWrites = []
  for (let i = 0; i < 2; i++) {
    readOnly.push(await load(svc, readSpec))
    const [r, w] = await Promise.all([load(svc, readSpec), load(svc, writeSpec)])
    mixedReads.push(r); mixedWrites.push(w)
  }
  // Two loads share one server here, so CPU per request of either alone means nothing: left blank.
  const shared = (r) => ({ ...r, cpuUsPerReq: NaN })
  const ro = record(`${label}: reads alone`, svc.name, `fixed@${readSpec.rate}`, combine(readOnly))
  const mr = record(`${label}: reads`, svc.name, `fixed@${readSpec.rate}`, shared(combine(mixedReads)))
  record(`${label}: creates`, svc.name, `fixed@${writeSpec.rate}`, shared(combine(mixedWrites)))
  const [br, bw] = await Promise.all([load(base, readSpec), load(base, writeSpec)])
  record(`${label}: reads`, base.name, `fixed@${readSpec.rate}`, shared(br))
  record(`${label}: creates`, base.name, `fixed@${writeSpec.rate}`, shared(bw))
  mr.ratio = mr.p99 / ro.p99
  return mr
}

/**
 * A fresh database in the throwaway cluster, migrated by the service's own migrations, with the
 * bench key and `pets` pets inserted in one statement (the same names, categories and statuses as
 * the SQLite stores, so the baseline's bytes fit both). Returns its URL.
 */
async function makePgStore (adminUrl, pets) {
  return await createDatabase(adminUrl, 'bench', hashApiKey(KEY), async (c) => {
    await c.query(`INSERT INTO pets (name, category_id, status)
      SELECT convert_to('pet-' || x, 'UTF8'), x % 97, (ARRAY['available', 'pending', 'sold'])[(x % 3) + 1]
      FROM generate_series(1, $1::int) AS x`, [pets])
    await c.query('VACUUM ANALYZE')
  })
}

// ---------------------------------------------------------------------------------------------
// Scenario 7: cold start.
const COLD_RUNS = 5
const HEALTH_BODY = '{"status":"ok"}'

/**
 * Spawns a process (pinned like every server), polls GET /healthz every 2 ms from the spawn, and
 * returns the time to the first 200, the process's CPU time (all threads) at that moment, and, for
 * the service, the time to its first /readyz 200 (the store answers) right after.
 */
async function coldStartOnce (args, env, readiness) {
  const port = await freePort()
  const started = process.hrtime.bigint()
  const child = session.spawn(process.execPath, [...args(port)], { cwd: ROOT, stdio: ['ignore', 'ignore', 'ignore'], env: { PATH: process.env.PATH, SHUTDOWN_DRAIN_MS: '0', ...env(port) } })
  await waitReady(port, '/healthz', 30000)
  const healthMs = Number(process.hrtime.bigint() - started) / 1e6
  const cpuMs = cpuSeconds([child.pid]) * 1000
  let readyMs
  if (readiness) {
    await waitReady(port, '/readyz', 30000)
    readyMs = Number(process.hrtime.bigint() - started) / 1e6
  }
  await stop(child)
  return { healthMs, cpuMs, readyMs }
}

/**
 * Spawn → first 200 on /healthz: the production service on the 1M-pet store (production settings,
 * info logs to /dev/null) next to a bare node:http process answering the same bytes (bench/baseline.mjs),
 * runs alternated so a change in the machine's load hits both; medians of COLD_RUNS each.
 */
async function coldStart (bigDb) {
  log(`7. cold start (${BIG} pets), ${COLD_RUNS} runs each, alternated`)
  const file = join(tmp, 'baseline-healthz.json')
  writeFileSync(file, JSON.stringify([{ method: 'GET', url: '/healthz', status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: Buffer.from(HEALTH_BODY).toString('base64') }]))
  const svc = []; const bare = []
  for (let i = 0; i < COLD_RUNS; i++) {
    svc.push(await coldStartOnce(
      () => [...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean), join(DIST, 'server.js')],
      (port) => ({ HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', DATABASE_URL: `sqlite:${bigDb}` }),
      true))
    bare.push(await coldStartOnce((port) => [join(ROOT, 'bench/baseline.mjs'), String(port), file], () => ({}), false))
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const max = (xs) => Math.max(...xs)
  const s = { healthMs: med(svc.map(r => r.healthMs)), cpuMs: med(svc.map(r => r.cpuMs)), readyMs: med(svc.map(r => r.readyMs)), runs: svc }
  const b = { healthMs: med(bare.map(r => r.healthMs)), cpuMs: med(bare.map(r => r.cpuMs)), runs: bare }
  const row = record('7 cold start @1M', 'service', 'spawn→200', { rps: NaN, p50: s.healthMs, p99: max(svc.map(r => r.healthMs)), errors: 0, cpu: NaN, cpuUsPerReq: NaN }, { cpuMsToFirst200: s.cpuMs, readyzMs: s.readyMs })
  record('7 cold start', 'baseline', 'spawn→200', { rps: NaN, p50: b.healthMs, p99: max(bare.map(r => r.healthMs)), errors: 0, cpu: NaN, cpuUsPerReq: NaN }, { cpuMsToFirst200: b.cpuMs })
  row.ratio = s.healthMs / b.healthMs
  row.cpuRatio = s.cpuMs / b.cpuMs
  const runs = (rs, k) => rs.map(r => r[k].toFixed(0)).join(', ')
  target('7 cold start @1M ≤ 400 ms', s.healthMs, '<=', 400, `spawn → first /healthz 200, median of ${COLD_RUNS} (runs: ${runs(svc, 'healthMs')} ms; first /readyz 200: ${s.readyMs.toFixed(0)} ms); CPU to first 200: ${s.cpuMs} ms`)
  target('7 cold start @1M ≤ 4× bare node:http', row.ratio, '<=', 4, `medians, service / bare node:http process (bare: ${b.healthMs.toFixed(0)} ms, runs ${runs(bare, 'healthMs')}; CPU to first 200 ${b.cpuMs} ms, service/bare ${fmt(row.cpuRatio, 1)}×)`)
  coldSummary = { service: s, bare: b, ratio: row.ratio, cpuRatio: row.cpuRatio }
}

// ---------------------------------------------------------------------------------------------
/** A full page of 100 pets (the store holds more): kept by the read cache. */
const PAGE100 = '/v1/pets?limit=100'
let base
let responses
let preloadBigMs
let coldSummary
let compressSummary
const readCache = {}
const t0 = Date.now()
const targets = []
function target (name, value, op, bound, how) {
  const met = op === '>=' ? value >= bound : value <= bound
  targets.push({ name, value, op, bound, met, how })
}

/** Scenarios 1 and 2 (SQLite reads, `svc` on `dbPath`), side by side with the baseline, and the read cache's counters after them; then with CORS and tracing on. */
async function sqliteReads (svc, dbPath) {
  log('1. list')
  const s1 = await sideBySide('1 list limit=20', svc, { path: LIST }, base, { path: LIST })
  target('1 list ≥ 0.6 of baseline', s1.sa.ratio, '>=', 0.6, 'req/s service / baseline')
  target('1 list ≥ 0.65 of baseline, per CPU', s1.sa.cpuRatio, '>=', 0.65, perCpuHow(s1.sa))

  log('2. getPet')
  const s2 = await sideBySide('2 getPet', svc, { path: PET }, base, { path: PET })
  target('2 getPet ≥ 0.6 of baseline', s2.sa.ratio, '>=', 0.6, 'req/s service / baseline')
  target('2 getPet ≥ 0.65 of baseline, per CPU', s2.sa.cpuRatio, '>=', 0.65, perCpuHow(s2.sa))
  readCache.sqlite = await readCacheStats(svc)

  // Reported, not judged: bare Fastify replaying the same bytes, next to the same baseline, so the
  // table shows how much of the distance is the framework's and how much is our own work.
  log('1–2 floor: bare Fastify, same bytes')
  const floor = await startBaseline(responses, 'fastify')
  for (const [scenario, path, s] of /** @type {Array<[string, string, typeof s1]>} */ ([['1 list limit=20', LIST, s1], ['2 getPet', PET, s2]])) {
    await warm(floor, { path })
    const f = record(scenario, floor.name, 'saturate', combine([await load(floor, { path }), await load(floor, { path })]))
    f.ratio = f.rps / s.sb.rps
    f.cpuRatio = s.sb.cpuUsPerReq / f.cpuUsPerReq
  }
  await stop(floor.child)
  await featureReads(svc, dbPath)
  return { s1, s2 }
}

/**
 * Scenarios 1 and 2 again with CORS on (requests carry an allowed Origin) and with tracing on (a
 * span per request exported to a local OTLP receiver): the one request path with the features that
 * add to it. Each is next to a baseline replaying the bytes that service sent: with CORS on, the
 * answers carry the CORS headers, so that baseline replays the CORS-on answers. Tracing's cost is
 * judged side by side with the plain service `plain` (CPU per request, tracing on / off), every
 * request traced (the default sampler) and, for the record, one root request in ten (the CPU ratio
 * is then off / sampled).
 */
async function featureReads (plain, dbPath) {
  const sink = await startOtlpSink()
  try {
    for (const [feature, env] of Object.entries(featureEnvs(sink.url))) {
      log(`1–2 with ${feature}`)
      const svc = await startService(`service-${feature.replace(' ', '-')}`, dbPath, env)
      const cors = feature === 'CORS on'
      const headers = cors ? { ...AUTH, origin: 'https://app.example' } : AUTH
      let limit = base
      try {
        if (cors) limit = await startBaseline(await okAnswers(svc, [LIST, PET], headers))
        const r1 = await sideBySide(`1 list limit=20, ${feature}`, svc, { path: LIST, headers }, limit, { path: LIST })
        const r2 = await sideBySide(`2 getPet, ${feature}`, svc, { path: PET, headers }, limit, { path: PET })
        if (feature === 'tracing on') {
          log(`  (${sink.exports()} span exports received)`)
          for (const [scenario, path] of [['1 list limit=20', LIST], ['2 getPet', PET]]) {
            const t = await sideBySide(`${scenario}, tracing on vs off`, svc, { path }, plain, { path })
            const cost = 1 / t.cpuRatio - 1
            target(`${scenario}: tracing on costs ≤ 15% per CPU`, cost, '<=', 0.15, `server CPU µs/req tracing on / off − 1; median of ${PAIRS} alternated pairs (${fmt(1 / t.pairs.cpu[1] - 1, 2)}–${fmt(1 / t.pairs.cpu[0] - 1, 2)})`)
          }
          // Not a target: what an operator who samples pays (observe.md, "What tracing costs").
          const sampled = await startService('service-tracing-10%', dbPath, { ...env, ...SAMPLED_10 })
          try {
            const t = await sideBySide('2 getPet, tracing 10% sampled vs off', sampled, { path: PET }, plain, { path: PET })
            t.sa.ratio = t.ratio
            t.sa.cpuRatio = t.cpuRatio
          } finally {
            await stop(sampled.child)
          }
        } else {
          target(`1 list ≥ 0.65 of baseline per CPU, ${feature}`, r1.sa.cpuRatio, '>=', 0.65, perCpuHow(r1.sa))
          target(`2 getPet ≥ 0.65 of baseline per CPU, ${feature}`, r2.sa.cpuRatio, '>=', 0.65, perCpuHow(r2.sa))
        }
      } finally {
        await stop(svc.child)
        if (limit !== base) await stop(limit.child)
      }
    }
  } finally {
    await sink.close()
  }
}

/**
 * Scenario 9: a cached full page of 100 pets read as it is and with `Accept-Encoding: gzip`, from the
 * same service process, runs alternated: bytes per response (the body on the wire) and server CPU per
 * request. The gzip bytes are made on the first request and kept with the cached page, so the gzip
 * row measures sending them, not compressing.
 */
async function compressedRead (svc) {
  log('9. compressed cached read: list limit=100, identity vs gzip')
  const gzipHeaders = { ...AUTH, 'accept-encoding': 'gzip' }
  const plain = await httpCall(svc.port, 'GET', PAGE100, AUTH)
  const gzip = await httpCall(svc.port, 'GET', PAGE100, gzipHeaders)
  if (plain.status !== 200 || gzip.status !== 200 || gzip.headers['content-encoding'] !== 'gzip' || plain.headers['content-encoding'] !== undefined) {
    throw new Error(`scenario 9: expected 200 identity and 200 gzip, got ${plain.status} ${plain.headers['content-encoding']} / ${gzip.status} ${gzip.headers['content-encoding']}`)
  }
  const s9 = await sideBySide('9 list limit=100, cached', { ...svc, name: 'service identity' }, { path: PAGE100 }, { ...svc, name: 'service gzip' }, { path: PAGE100, headers: gzipHeaders })
  s9.sa.bytesPerResponse = plain.body.length
  s9.sb.bytesPerResponse = gzip.body.length
  // The gzip row's ratios: its req/s and bytes over identity's; CPU ratio as elsewhere, identity / gzip.
  s9.sb.ratio = s9.sb.rps / s9.sa.rps
  s9.sb.cpuRatio = s9.sa.cpuUsPerReq / s9.sb.cpuUsPerReq
  s9.sb.bytesRatio = gzip.body.length / plain.body.length
  log(`  bytes per response: identity ${plain.body.length}, gzip ${gzip.body.length} (${fmt(s9.sb.bytesRatio * 100, 1)}%); CPU µs/req identity ${fmt(s9.sa.cpuUsPerReq, 1)}, gzip ${fmt(s9.sb.cpuUsPerReq, 1)}`)
  compressSummary = { identityBytes: plain.body.length, gzipBytes: gzip.body.length, identityCpuUsPerReq: s9.sa.cpuUsPerReq, gzipCpuUsPerReq: s9.sb.cpuUsPerReq }
}

log(`bench: ${DURATION}s runs, ${CONNECTIONS} connections, ${coreCount} cores, ${canPin ? 'servers pinned to core 0, load generator to core 1' : 'no CPU pinning (taskset missing or 1 core)'}`)
const loadBefore = loadavg()
const loadText = (l) => l.map(x => x.toFixed(2)).join(' / ')
if (loadBefore[0] >= 1) {
  const bar = '!'.repeat(78)
  log(`\n${bar}\n!! WARNING: the machine is busy: 1-minute load average ${loadBefore[0].toFixed(2)} (≥ 1) at start.\n!! Other work competes for the cores: req/s, latencies and cold start below are not\n!! comparable with a quiet run (the CPU-per-request ratios suffer least). Check \`uptime\`.\n${bar}\n`)
}
if (ONLY === 'all') {
  log('preloading stores…')
  const smallDb = await makeStore('small', SMALL)
  const relaxedDb = await makeStore('relaxed', SMALL)
  const tBig = Date.now()
  const bigDb = await makeStore('big', BIG)
  preloadBigMs = Date.now() - tBig
  log(`  ${BIG} pets bulk-inserted in ${preloadBigMs} ms`)

  const svc = await startService('service', smallDb, {}, { metrics: true })
  const relaxed = await startService('service NORMAL', relaxedDb, {}, { storeOptions: { sqliteSynchronous: 'NORMAL' } })

  // The response bytes the baseline replays.
  // Near the end of the walk: the last, partial page (10 pets), which the full-page cache never holds,
  // so these runs measure the store's index walk at either size.
  const deepSmall = cursorFor(smallDb, SMALL - 10)
  const deepSmallSold = cursorFor(smallDb, SMALL - 30, 'sold')
  responses = [
    await capture(svc, 'GET', LIST, AUTH),
    await capture(svc, 'GET', PET, AUTH),
    await capture(svc, CREATE.method, CREATE.path, CREATE.headers, CREATE.body)
  ]
  base = await startBaseline(responses)

  const { s1, s2 } = await sqliteReads(svc, smallDb)

  await compressedRead(svc)

  log('logger cost: getPet with LOG_LEVEL=warn (no per-request lines) next to info, as npm start runs')
  const quiet = await startService('service warn-log', smallDb, { LOG_LEVEL: 'warn' })
  const lc = await sideBySide('logger cost: getPet', svc, { path: PET }, quiet, { path: PET })
  lc.sa.ratio = lc.ratio
  lc.sa.cpuRatio = lc.cpuRatio
  await stop(quiet.child)

  log(`6. memory (${BIG} pets)`)
  const big = await startService('service 1M', bigDb)
  await warm(big, { path: LIST })
  const m1 = record('6 list limit=20 @1M', big.name, 'saturate', await load(big, { path: LIST }))
  const rss = peakRssMb(big.child.pid)
  m1.peakRssMb = rss
  target('6 peak RSS under scenario 1 @1M < 150 MB', rss, '<=', 150, 'VmHWM of the service process, MB')

  log(`5. growth (${SMALL} vs ${BIG} pets)`)
  // Both stores served at once and their runs alternated, so a change in the machine's load hits both.
  const deepBig = cursorFor(bigDb, BIG - 10)
  const deepBigSold = cursorFor(bigDb, BIG - 30, 'sold')
  const growthSpecs = {
    plain: [{ path: `${LIST}&cursor=${deepSmall}` }, { path: `${LIST}&cursor=${deepBig}` }],
    sold: [{ path: `/v1/pets?limit=20&status=sold&cursor=${deepSmallSold}` }, { path: `/v1/pets?limit=20&status=sold&cursor=${deepBigSold}` }]
  }
  for (const [k, [small, large]] of Object.entries(growthSpecs)) {
    const g = await sideBySide(`5 deep page ${k} 1k vs 1M`, svc, small, big, large)
    g.fb.ratio = g.fb.p99 / g.fa.p99
    g.fb.cpuRatio = g.fb.cpuUsPerReq / g.fa.cpuUsPerReq
    target(`5 deep page ${k === 'sold' ? 'status=sold ' : ''}p99 @1M ≤ 1.25× @1k`, g.fb.ratio, '<=', 1.25,
      `fixed-rate p99 at 1M / at 1k pets (CPU per request 1M / 1k: ${fmt(g.fb.cpuRatio, 2)})`)
  }
  await stop(big.child)

  log('3. durable create')
  const s3 = await sideBySide('3 create FULL vs NORMAL', svc, CREATE, relaxed, CREATE)
  s3.sa.ratio = s3.sa.rps / s3.sb.rps
  s3.sa.cpuRatio = s3.sb.cpuUsPerReq / s3.sa.cpuUsPerReq
  target('3a create FULL ≥ 0.8 of NORMAL', s3.sa.ratio, '>=', 0.8, 'req/s synchronous=FULL / synchronous=NORMAL, same build')
  target('3a create FULL ≥ 0.8 of NORMAL, per CPU', s3.sa.cpuRatio, '>=', 0.8, 'server CPU µs/req NORMAL / FULL')
  await warm(base, CREATE)
  const postBase = record('3 create', base.name, 'saturate', await load(base, CREATE))
  const getBase = Math.max(s1.sb.rps, s2.sb.rps)
  s3.sa.ratioGet = s3.sa.rps / getBase
  target('3b create FULL ≥ 0.35 of GET baseline', s3.sa.ratioGet, '>=', 0.35, 'req/s create FULL / max(list, getPet baseline)')
  postBase.ratio = s3.sa.rps / postBase.rps

  log('4. mixed 90% list / 10% durable create')
  const m4 = await mixed('4 mixed', svc, s1.rate)
  target('4 mixed read p99 ≤ 2× read-only p99', m4.ratio, '<=', 2, 'p99 of reads with 10% creates / without')

  await stop(svc.child)
  await stop(relaxed.child)

  await coldStart(bigDb)
}

// --only=reads: scenarios 1–2 and 8.1–8.2, the read targets alone, for working on the hot path.
if (ONLY === 'reads') {
  const db = await makeStore('small', SMALL)
  const svc = await startService('service', db, {}, { metrics: true })
  responses = [await capture(svc, 'GET', LIST, AUTH), await capture(svc, 'GET', PET, AUTH), await capture(svc, CREATE.method, CREATE.path, CREATE.headers, CREATE.body)]
  base = await startBaseline(responses)
  await sqliteReads(svc, db)
  await stop(svc.child)
}

if (ONLY === 'compress') {
  const db = await makeStore('small', SMALL)
  const svc = await startService('service', db)
  await compressedRead(svc)
  await stop(svc.child)
}

if (ONLY === 'cold') {
  log('preloading the store…')
  const tBig = Date.now()
  const bigDb = await makeStore('big', BIG)
  preloadBigMs = Date.now() - tBig
  log(`  ${BIG} pets bulk-inserted in ${preloadBigMs} ms`)
  await coldStart(bigDb)
}

let pgSummary
if (ONLY === 'all' || ONLY === 'pg' || ONLY === 'reads') {
  log(`8. PostgreSQL (${PG_DURATION}s runs): scenarios 1–4 on a throwaway local cluster`)
  const tPg = Date.now()
  const cluster = session.own(await startCluster())
  // The database server is a server too: on core 0 with the service (backends it forks inherit this).
  if (canPin) {
    const postmaster = readFileSync(join(cluster.dir, 'postmaster.pid'), 'utf8').split('\n')[0]
    spawnSync('taskset', ['-a', '-cp', '0', postmaster], { stdio: 'ignore' })
  }
  const pgUrl = await makePgStore(cluster.url, SMALL)
  log(`  cluster started, ${SMALL} pets preloaded in ${Date.now() - tPg} ms`)
  const pgSvc = await startService('service pg', undefined, { DATABASE_URL: pgUrl }, { metrics: true })
  if (base === undefined) {
    responses = [
      await capture(pgSvc, 'GET', LIST, AUTH),
      await capture(pgSvc, 'GET', PET, AUTH),
      await capture(pgSvc, CREATE.method, CREATE.path, CREATE.headers, CREATE.body)
    ]
    base = await startBaseline(responses)
  }
  const short = (spec) => ({ ...spec, duration: PG_DURATION })
  const p1 = await sideBySide('8.1 pg list limit=20', pgSvc, short({ path: LIST }), base, short({ path: LIST }))
  const p2 = await sideBySide('8.2 pg getPet', pgSvc, short({ path: PET }), base, short({ path: PET }))
  readCache.postgresql = await readCacheStats(pgSvc)
  target('8.1 pg list ≥ 0.45 of baseline', p1.sa.ratio, '>=', 0.45, 'req/s service / baseline')
  target('8.1 pg list ≥ 0.65 of baseline, per CPU', p1.sa.cpuRatio, '>=', 0.65, perCpuHow(p1.sa, 'server CPU µs/req baseline / service (the service process only, not PostgreSQL\'s)'))
  target('8.2 pg getPet ≥ 0.45 of baseline', p2.sa.ratio, '>=', 0.45, 'req/s service / baseline')
  target('8.2 pg getPet ≥ 0.65 of baseline, per CPU', p2.sa.cpuRatio, '>=', 0.65, perCpuHow(p2.sa, 'as 8.1'))
  let p3, p4
  if (ONLY !== 'reads') {
    p3 = await sideBySide('8.3 pg create', pgSvc, short(CREATE), base, short(CREATE))
    p3.sa.ratioGet = p3.sa.rps / Math.max(p1.sb.rps, p2.sb.rps)
    target('8.3 pg create ≥ 0.35 of GET baseline', p3.sa.ratioGet, '>=', 0.35, `req/s create / max(8.1, 8.2 baseline); vs the POST baseline: ${fmt(p3.sa.ratio, 2)}`)
    p4 = await mixed('8.4 pg mixed', pgSvc, p1.rate, PG_DURATION)
    target('8.4 pg mixed read p99 ≤ 2× read-only p99', p4.ratio, '<=', 2, 'p99 of reads with 10% creates / without')
  }
  await stop(pgSvc.child)
  await cluster.destroy()
  session.disown(cluster)
  pgSummary = {
    list: { ratio: p1.sa.ratio, cpuRatio: p1.sa.cpuRatio },
    getPet: { ratio: p2.sa.ratio, cpuRatio: p2.sa.cpuRatio },
    create: p3 === undefined ? undefined : { ratioPostBaseline: p3.sa.ratio, ratioGetBaseline: p3.sa.ratioGet, cpuRatio: p3.sa.cpuRatio },
    mixedReadP99Ratio: p4?.ratio
  }
  log(`  8 summary: list ${fmt(p1.sa.ratio, 2)} (CPU ${fmt(p1.sa.cpuRatio, 2)}), getPet ${fmt(p2.sa.ratio, 2)} (CPU ${fmt(p2.sa.cpuRatio, 2)})` +
    (p3 === undefined ? '' : `, create ${fmt(p3.sa.ratioGet, 2)} of GET baseline, mixed read p99 ${fmt(p4.ratio, 2)}×`))
}

if (base !== undefined) await stop(base.child)

// ---------------------------------------------------------------------------------------------
const loadAfter = loadavg()
const env = {
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: coreCount,
  pinning: canPin ? 'servers on core 0, load generator on core 1 (taskset)' : 'none',
  // os.loadavg(): 1, 5 and 15 minutes, at the start and at the end of the run.
  loadAverageBefore: loadBefore,
  loadAverageAfter: loadAfter,
  durationSeconds: DURATION,
  connections: CONNECTIONS,
  bigStore: BIG,
  preloadBigMs,
  only: ONLY,
  pgDurationSeconds: PG_DURATION,
  totalSeconds: Math.round((Date.now() - t0) / 1000)
}
/** @param {{ service: { cpuMs: number }, bare: { cpuMs: number } } | undefined} c */
const coldNote = (c) => c === undefined
  ? []
  : [`Scenario 7 rows: p50 = median and p99 = slowest of ${COLD_RUNS} spawn → first /healthz 200, in ms; ratio = service / bare medians; CPU ratio = CPU time to the first 200, service / bare (${c.service.cpuMs} / ${c.bare.cpuMs} ms). Each start is a new process on the built install: compile cache (filled by npm run build) and OS file cache warm.`, '']
/** @param {{ identityBytes: number, gzipBytes: number, identityCpuUsPerReq: number, gzipCpuUsPerReq: number } | undefined} c */
const compressNote = (c) => c === undefined
  ? []
  : [`Scenario 9 rows (one service, a cached 100-pet page): bytes per response (body) identity ${c.identityBytes}, gzip ${c.gzipBytes}; CPU µs/req identity ${fmt(c.identityCpuUsPerReq, 1)}, gzip ${fmt(c.gzipCpuUsPerReq, 1)}; the gzip row's ratio = its req/s / identity's, CPU ratio = identity / gzip.`, '']
const pct = (x) => Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '–'
const md = [
  `Node ${env.node} · ${env.cpu} · ${env.cores} cores · ${env.pinning} · ${DURATION}s runs (PostgreSQL, scenario 8: ${PG_DURATION}s), ${CONNECTIONS} connections · ${env.date}`,
  '',
  `Load average (1 / 5 / 15 min): ${loadText(loadBefore)} before, ${loadText(loadAfter)} after.` +
    (loadBefore[0] >= 1 ? ' **The machine was busy at the start (1-minute load average ≥ 1): not a quiet run.**' : ''),
  '',
  '| scenario | server | run | req/s | p50 ms | p99 ms | errors | server CPU | CPU µs/req | ratio | CPU ratio |',
  '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(r => `| ${r.scenario} | ${r.server} | ${r.mode} | ${fmt(r.rps, 0)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${r.errors} | ${fmt(r.cpu * 100, 0)}% | ${fmt(r.cpuUsPerReq, 0)} | ${r.ratio === undefined ? '' : fmt(r.ratio, 2)} | ${r.cpuRatio === undefined ? '' : fmt(r.cpuRatio, 2)} |`),
  '',
  ...coldNote(coldSummary),
  ...compressNote(compressSummary),
  ...(Object.keys(readCache).length === 0
    ? []
    : [
        '| read cache (service /metrics) | getPet hits | misses | hit rate | list page hits | misses | hit rate | entries | bytes |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
        ...Object.entries(readCache).map(([store, c]) => `| ${store}, after scenarios ${store === 'sqlite' ? '1–2' : '8.1–8.2'} | ${c.pet.hits} | ${c.pet.misses} | ${pct(c.pet.hitRate)} | ${c.page.hits} | ${c.page.misses} | ${pct(c.page.hitRate)} | ${c.entries} | ${c.bytes} |`),
        ''
      ]),
  '| target | measured | bound | met | how |',
  '|---|---:|---:|:-:|---|',
  ...targets.map(t => `| ${t.name} | ${fmt(t.value, 2)} | ${t.op} ${t.bound} | ${t.met ? 'yes' : '**no**'} | ${t.how} |`),
  '',
].join('\n')
// A partial run (--only=…) writes beside the full run's results instead of over them.
const outName = ONLY === 'all' ? 'latest' : `latest-${ONLY}`
const outDir = join(ROOT, 'bench/results')
mkdirSync(outDir, { recursive: true })
writeFileSync(join(outDir, `${outName}.json`), JSON.stringify({ env, rows, targets, readCache, coldStart: coldSummary, postgres: pgSummary, compressed: compressSummary }, null, 2) + '\n')
writeFileSync(join(outDir, `${outName}.md`), md)
process.stdout.write('\n' + md)
log(`\nwritten: bench/results/${outName}.json, bench/results/${outName}.md (${env.totalSeconds}s)`)
// The realistic mix (bench/mix.mjs) follows a full run, in a process of its own.
if (ONLY === 'all') process.exitCode = spawnSync(process.execPath, [join(ROOT, 'bench/mix.mjs')], { stdio: 'inherit' }).status ?? 1
process.exit()
