// `npm run bench -- --compare <git ref> [--rounds 9] [--duration 4] [--bound 0.85]`: this checkout's
// build (dist/, as built) against the build of another commit, made in a temporary git worktree
// (its node_modules copied from this checkout when the two package-lock.json files are identical,
// else `npm ci`; then `npm run build`) and removed on exit. Rows: the cached list page, a cached
// pet, the realistic mix with Zipf ids (bench/mix-stream.mjs) and the durable create. Both builds
// serve at once, each on its own store made by its own migrations, and in every round each runs
// once, the order rotated from round to round, so a change in the machine's load hits both. The
// figure per row is the server process's CPU per request (and req/s): new over old per CPU is the
// median of the rounds' ratios, old µs/req / new µs/req, judged against --bound when there are at
// least 9 rounds. Reported beside them, not judged: the current build with one root request in ten
// traced (spans to the local OTLP receiver) against tracing off, from the same rounds. Loopback only;
// the default run takes about ten minutes. Writes bench/results/compare-<ref>.{json,md}, with the
// load average before, after and at the end of each row; exits 1 when a judged row misses its bound.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { AUTH, CREATE, DIST, fmt, freePort, KEY, LIST, log, makeStore, measure, median, PET, pinning, requireBuild, ROOT, scratch, startService, stop } from './lib.mjs'
import { KEYS, loadMix, mixRequests, PETS, walks, WARM_MAX_S, warmUp } from './mix-stream.mjs'
import { featureEnvs, SAMPLED_10, startOtlpSink } from './otlp-sink.mjs'

const { values: opts } = parseArgs({
  options: {
    compare: { type: 'string' },
    rounds: { type: 'string', default: '9' },
    duration: { type: 'string', default: process.env.BENCH_DURATION ?? '4' },
    bound: { type: 'string', default: '0.85' }
  }
})
/** Fewer rounds make a smoke run: its rows are reported, not judged. */
const JUDGED_ROUNDS = 9
const ROUNDS = Number(opts.rounds)
const DURATION = Number(opts.duration)
const BOUND = Number(opts.bound)
const WARMUP = Math.max(1, Math.round(DURATION * 0.4))
if (opts.compare === undefined || !(Number.isInteger(ROUNDS) && ROUNDS >= 1 && ROUNDS <= 25) || !(DURATION >= 1 && DURATION <= 20) || !(BOUND > 0)) {
  log('usage: npm run bench -- --compare <git ref> [--rounds 1–25, default 9] [--duration 1–20 s per run, default 4] [--bound per-CPU ratio, default 0.85]')
  process.exit(2)
}
requireBuild()

const git = (...args) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' }).stdout.trim()
const refSha = git('rev-parse', '--verify', '--quiet', `${opts.compare}^{commit}`)
if (refSha === '') {
  log(`bench: ${opts.compare} names no commit here`)
  process.exit(2)
}
const refShort = git('rev-parse', '--short', refSha)
const head = git('rev-parse', '--short', 'HEAD')
const dirty = git('status', '--porcelain', '--untracked-files=no') !== ''

const { canPin, wrap } = pinning()
const session = scratch('petstore-compare-', { wrap })
const loadBefore = loadavg()
const t0 = Date.now()

/**
 * Runs a command with its output on stderr (stdout is for the results); a failure stops the bench.
 * Without this checkout's node_modules/.bin on PATH (npm run puts it first): the ref's install and
 * build choose their own Node through their own shim.
 */
function run (cmd, args, cwd) {
  const ownBin = join(ROOT, 'node_modules', '.bin')
  const PATH = (process.env.PATH ?? '').split(':').filter(d => d !== ownBin).join(':')
  const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 2, 2], env: { ...process.env, PATH } })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed: ${r.status ?? r.signal}`)
}

/** The ref checked out in a temporary worktree (removed on exit), its dependencies installed and its build made. */
function buildRef () {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-ref-'))
  const tree = join(dir, refShort)
  process.on('exit', () => {
    log(`removing the worktree of ${refShort}`)
    spawnSync('git', ['worktree', 'remove', '--force', tree], { cwd: ROOT, stdio: 'ignore' })
    rmSync(dir, { recursive: true, force: true })
    spawnSync('git', ['worktree', 'prune'], { cwd: ROOT, stdio: 'ignore' })
  })
  run('git', ['worktree', 'add', '--detach', tree, refSha], ROOT)
  const sameLock = readFileSync(join(tree, 'package-lock.json')).equals(readFileSync(join(ROOT, 'package-lock.json')))
  log(sameLock ? 'same package-lock.json: copying node_modules' : 'package-lock.json differs: npm ci')
  // cp -a keeps node_modules' relative links (the node shim's package) pointing into the ref's own tree.
  if (sameLock) run('cp', ['-a', join(ROOT, 'node_modules'), join(tree, 'node_modules')], ROOT)
  else run('npm', ['ci', '--no-audit', '--no-fund'], tree)
  run('npm', ['run', 'build'], tree)
  return { tree, install: sameLock ? 'node_modules copied (same package-lock.json)' : 'npm ci' }
}

// ---------------------------------------------------------------------------------------------
log(`compare: this build (${head}${dirty ? ' + uncommitted changes' : ''}) against ${opts.compare} (${refShort}); ${ROUNDS} rounds of ${DURATION} s per row`)
const ref = buildRef()
log(`ref built in ${Math.round((Date.now() - t0) / 1000)} s`)
const { loadConfig } = await import(join(DIST, 'config/index.js'))
const cacheBytes = loadConfig({}).readCacheMaxBytes
const sink = await startOtlpSink()

/** The three servers: the ref's build, this build, and this build with 10% of root requests traced. */
const sides = [
  { key: 'old', root: ref.tree, env: {} },
  { key: 'new', root: ROOT, env: {} },
  { key: 'traced', root: ROOT, env: { ...featureEnvs(sink.url)['tracing on'], ...SAMPLED_10 } }
]
log(`preloading ${sides.length} stores of ${PETS} pets…`)
const servers = []
for (const side of sides) {
  const db = await makeStore(join(side.root, 'dist'), join(session.tmp, `${side.key}.db`), PETS, [KEY, ...KEYS])
  const metricsPort = await freePort()
  const svc = await startService(session, side.key, { DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'info', METRICS_PORT: String(metricsPort), ...side.env }, undefined, side.root)
  servers.push({ ...svc, metricsPort, pages: undefined })
}

/** A row: a measured run against one server (`seed` picks the mix's request sequence), and its warm-up. */
const fixed = (name, spec) => ({
  name,
  run: (svc, _seed, duration) => measure(svc, { ...spec, duration }),
  warm: (svc) => measure(svc, { ...spec, duration: WARMUP })
})
const mixStream = (svc, seed) => mixRequests(svc.pages, PETS, 'zipf', seed)
const rowSpecs = [
  fixed(`cached list (GET ${LIST})`, { path: LIST, headers: AUTH }),
  fixed(`cached getPet (GET ${PET})`, { path: PET, headers: AUTH }),
  {
    name: `realistic mix, Zipf ids (${PETS} pets)`,
    run: (svc, seed, duration) => loadMix(svc, mixStream(svc, seed), { duration }),
    // Cursor URLs are signed with each store's own key: every server walks its own pages.
    warm: async (svc) => { svc.pages = await walks(svc.port); await warmUp(svc, seed => mixStream(svc, seed), cacheBytes, WARM_MAX_S) }
  },
  fixed('durable create (POST /v1/pets)', CREATE)
]

const summary = (runs) => ({
  rps: median(runs.map(r => r.rps)),
  cpuUsPerReq: median(runs.map(r => r.cpuUsPerReq)),
  p99: median(runs.map(r => r.p99)),
  errors: runs.reduce((a, r) => a + r.errors, 0)
})
/** Round by round, `b` over `a`: requests per CPU-second and req/s; their medians and ranges. */
function ratios (a, b) {
  const perCpu = a.map((x, i) => x.cpuUsPerReq / b[i].cpuUsPerReq)
  const rps = a.map((x, i) => b[i].rps / x.rps)
  return { perCpu: median(perCpu), perCpuRange: [Math.min(...perCpu), Math.max(...perCpu)], rps: median(rps), perCpuRounds: perCpu }
}

const rows = []
for (const spec of rowSpecs) {
  log(spec.name)
  for (const svc of servers) await spec.warm(svc)
  const runs = servers.map(() => [])
  for (let i = 0; i < ROUNDS; i++) {
    for (let k = 0; k < servers.length; k++) {
      const j = (k + i) % servers.length
      runs[j].push(await spec.run(servers[j], 10 + i, DURATION))
    }
    log(`  round ${i + 1}: CPU µs/req ${servers.map((s, j) => `${s.name} ${fmt(runs[j][i].cpuUsPerReq, 1)}`).join(', ')}`)
  }
  const [old, now, traced] = runs.map(summary)
  const vsOld = ratios(runs[0], runs[1])
  const errors = old.errors + now.errors
  const row = {
    name: spec.name,
    old,
    new: now,
    ...vsOld,
    met: errors > 0 ? false : ROUNDS >= JUDGED_ROUNDS ? vsOld.perCpu >= BOUND : undefined,
    tracing: { off: now, sampled: traced, ...ratios(runs[1], runs[2]) },
    loadAfter: loadavg()
  }
  rows.push(row)
  log(`  new/old per CPU ${fmt(row.perCpu, 3)} (${fmt(row.perCpuRange[0], 2)}–${fmt(row.perCpuRange[1], 2)}), req/s ${fmt(row.rps, 3)}; tracing 10%/off per CPU ${fmt(row.tracing.perCpu, 3)}`)
}
for (const svc of servers) await stop(svc.child)
const exports = sink.exports()
await sink.close()

// ---------------------------------------------------------------------------------------------
const loadAfter = loadavg()
const loadText = (l) => l.map(x => x.toFixed(2)).join(' / ')
const range = (r) => `${fmt(r[0], 2)}–${fmt(r[1], 2)}`
const verdict = (met) => met === undefined ? '–' : met ? 'yes' : '**no**'
const env = {
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  pinning: canPin ? 'servers on core 0, load generator on core 1 (taskset)' : 'none',
  current: { head, uncommittedChanges: dirty },
  ref: { name: opts.compare, sha: refSha, install: ref.install },
  rounds: ROUNDS,
  durationSeconds: DURATION,
  bound: BOUND,
  pets: PETS,
  // os.loadavg(): 1, 5 and 15 minutes; each row also keeps the figure at its end.
  loadAverageBefore: loadBefore,
  loadAverageAfter: loadAfter,
  spanExports: exports,
  totalSeconds: Math.round((Date.now() - t0) / 1000)
}
const md = [
  `# This build (${head}${dirty ? ' + uncommitted changes' : ''}) against ${opts.compare} (${refShort})`,
  '',
  `Node ${env.node} · ${env.cpu} · ${env.cores} cores · ${env.pinning} · ${ROUNDS} rounds of ${DURATION} s per row, the three servers in turn (order rotated each round), 64 connections · ${env.date}`,
  '',
  `Load average (1 / 5 / 15 min): ${loadText(loadBefore)} before, ${loadText(loadAfter)} after.` +
    (loadBefore[0] >= 1 ? ' **The machine was busy at the start (1-minute load average ≥ 1): not a quiet run.**' : ''),
  ...(ROUNDS < JUDGED_ROUNDS ? ['', `**A smoke run: fewer than ${JUDGED_ROUNDS} rounds, rows reported, not judged.**`] : []),
  '',
  `Per CPU: requests per CPU-second of the server process, new over old (old µs/req / new µs/req), the median of the rounds' ratios (their range in brackets); 1 is equal, below 1 the new build spends more CPU per request. Met: ≥ ${BOUND} and no errors. Figures per build: medians of the rounds.`,
  '',
  '| row | req/s old → new | req/s new/old | CPU µs/req old → new | new/old per CPU (rounds) | met | errors | load after |',
  '|---|---:|---:|---:|---:|:-:|---:|---:|',
  ...rows.map(r => `| ${r.name} | ${fmt(r.old.rps)} → ${fmt(r.new.rps)} | ${fmt(r.rps, 2)} | ${fmt(r.old.cpuUsPerReq, 1)} → ${fmt(r.new.cpuUsPerReq, 1)} | ${fmt(r.perCpu, 2)} (${range(r.perCpuRange)}) | ${verdict(r.met)} | ${r.old.errors + r.new.errors} | ${fmt(r.loadAfter[0], 2)} |`),
  '',
  `Tracing, this build, reported, not judged: one root request in ten traced (OTEL_TRACES_SAMPLER=${SAMPLED_10.OTEL_TRACES_SAMPLER}, OTEL_TRACES_SAMPLER_ARG=${SAMPLED_10.OTEL_TRACES_SAMPLER_ARG}), spans exported to a local OTLP receiver (${exports} exports), against tracing off; per CPU as above, traced over off.`,
  '',
  '| row | CPU µs/req off → 10% traced | 10%/off per CPU (rounds) | req/s 10%/off | errors |',
  '|---|---:|---:|---:|---:|',
  ...rows.map(r => `| ${r.name} | ${fmt(r.tracing.off.cpuUsPerReq, 1)} → ${fmt(r.tracing.sampled.cpuUsPerReq, 1)} | ${fmt(r.tracing.perCpu, 2)} (${range(r.tracing.perCpuRange)}) | ${fmt(r.tracing.rps, 2)} | ${r.tracing.sampled.errors} |`),
  ''
].join('\n')
const outDir = join(ROOT, 'bench/results')
mkdirSync(outDir, { recursive: true })
const outName = `compare-${opts.compare.replace(/[^\w.-]+/g, '_')}`
writeFileSync(join(outDir, `${outName}.json`), JSON.stringify({ env, rows }, null, 2) + '\n')
writeFileSync(join(outDir, `${outName}.md`), md)
process.stdout.write('\n' + md)
log(`\nwritten: bench/results/${outName}.json, bench/results/${outName}.md (${env.totalSeconds} s)`)
process.exit(rows.some(r => r.met === false) ? 1 : 0)
