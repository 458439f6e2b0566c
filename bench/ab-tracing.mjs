// Interleaved A/B of the server's CPU per request for a cached read, tracing off vs on (same build):
// `node bench/ab-tracing.mjs [rounds=4] [seconds=5] [get|list]`, each side loaded in turn in every
// round, medians of the per-round ratios. AB=on-vs-on compares two builds with tracing on (AB_DIST_A,
// e.g. a copy of an older dist/, against dist/; AB_ENV_A/AB_ENV_B add variables); AB_SIDES lists any
// sides as JSON ([[name, dist, env], …]; {"OTEL_SDK_DISABLED":"true"} is tracing off). Servers on
// core 0, this process (load and OTLP receiver) on core 1; AB_NODE_ARGS passes node flags (--cpu-prof)
// to every server, AB_THREADS=1 prints each server's CPU by thread.
import { spawnSync } from 'node:child_process'
import { copyFileSync, readdirSync, readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { DIST, KEY, cpuSeconds, freePort, makeStore, scratch, stop, waitReady } from './lib.mjs'
import { featureEnvs, startOtlpSink } from './otlp-sink.mjs'

const rounds = Number(process.argv[2] ?? 4)
const seconds = Number(process.argv[3] ?? 5)
const which = process.argv[4] ?? 'get'
const path = which === 'list' ? '/v1/pets?limit=20' : '/v1/pets/500'
spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' })
const session = scratch('petstore-ab-', { wrap: (cmd, args) => ['taskset', ['-c', '0', cmd, ...args]] })
const dbPath = join(session.tmp, 'ab.db')
await makeStore(DIST, dbPath, 1000, [KEY])

const sink = await startOtlpSink()
const tracingOn = { ...featureEnvs(sink.url)['tracing on'], ...JSON.parse(process.env.AB_TRACING_ENV ?? '{}') }
/** @type {Array<[string, string, Record<string, string>]>} */
const sides = process.env.AB_SIDES !== undefined
  // [[name, dist directory, env added to tracing on (OTEL_SDK_DISABLED=true: off)], …], run round-robin.
  ? JSON.parse(process.env.AB_SIDES).map(([name, dist, env]) => [name, dist, { ...tracingOn, ...env }])
  : process.env.AB === 'on-vs-on'
    ? [['A', /** @type {string} */ (process.env.AB_DIST_A ?? DIST), { ...tracingOn, ...JSON.parse(process.env.AB_ENV_A ?? '{}') }], ['B', DIST, { ...tracingOn, ...JSON.parse(process.env.AB_ENV_B ?? '{}') }]]
    : [['off', DIST, {}], ['on', DIST, tracingOn]]
const servers = []
for (const [name, dist, env] of sides) {
  const port = await freePort()
  // A store per side: another build may migrate it.
  const own = join(session.tmp, `ab-${servers.length}.db`)
  copyFileSync(dbPath, own)
  const child = session.spawn(process.execPath, [...(process.env.AB_NODE_ARGS ?? '').split(' ').filter(Boolean), join(dist, 'server.js')], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT_MAX: '1000000000', SHUTDOWN_DRAIN_MS: '0', DATABASE_URL: `sqlite:${own}`, LOG_LEVEL: 'info', ...env }
  })
  await waitReady(port, '/readyz', 30000, child)
  servers.push({ name, child, port, requests: 0 })
}

async function run (svc, duration) {
  const before = cpuSeconds([svc.child.pid])
  const res = await autocannon({ url: `http://127.0.0.1:${svc.port}${path}`, headers: { authorization: `Bearer ${KEY}` }, connections: 64, duration })
  const used = cpuSeconds([svc.child.pid]) - before
  if (res.non2xx + res.errors > 0) throw new Error(`${svc.name}: ${res.non2xx} non-2xx, ${res.errors} errors`)
  svc.requests += res.requests.total
  return used * 1e6 / res.requests.total
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]
const load = () => loadavg().map(l => l.toFixed(2)).join(' ')
process.stderr.write(`load before ${load()}\n`)
for (const svc of servers) await run(svc, 2)
const results = servers.map(() => [])
for (let i = 0; i < rounds; i++) {
  const line = []
  // Each round starts one side later: no side always runs first, or last, in a round.
  for (let k = 0; k < servers.length; k++) {
    const j = (k + i) % servers.length
    const svc = servers[j]
    const us = await run(svc, seconds)
    results[j].push(us)
    line.push(`${svc.name} ${us.toFixed(1)}`)
  }
  process.stderr.write(`round ${i + 1}: ${line.join(', ')} µs/req\n`)
}
if (process.env.AB_THREADS === '1') {
  for (const svc of servers) {
    const threads = readdirSync(`/proc/${svc.child.pid}/task`).map(tid => {
      const stat = readFileSync(`/proc/${svc.child.pid}/task/${tid}/stat`, 'utf8')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      return /** @type {[string, number]} */ ([stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), (Number(f[11]) + Number(f[12])) / 100])
    }).filter(([, cpu]) => cpu > 0.05)
    process.stderr.write(`${svc.name} threads (CPU s): ${threads.map(([n, cpu]) => `${n} ${cpu.toFixed(2)}`).join(', ')}\n`)
  }
}
for (const svc of servers) await stop(svc.child)
// Each side against the first, round by round (the rounds share the machine's load of the moment).
const first = results[0]
process.stderr.write(`${which}, ${rounds} rounds of ${seconds} s; median µs/req: ${servers.map((svc, j) => `${svc.name} ${median(results[j]).toFixed(1)}`).join(', ')}\n`)
for (const [j, svc] of servers.entries()) {
  if (j === 0) continue
  process.stderr.write(`  ${servers[0].name}/${svc.name} per CPU: median of round ratios ${median(first.map((x, i) => x / results[j][i])).toFixed(3)} (ratio of medians ${(median(first) / median(results[j])).toFixed(3)})\n`)
}
process.stderr.write(`${sink.exports()} exports; requests ${servers.map(svc => `${svc.name} ${svc.requests}`).join(', ')}; load after ${load()}\n`)
await sink.close()
process.exit(0)
