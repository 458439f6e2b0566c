// `npm run bench:profile -- list|get|create [seconds] [--cors] [--tracing]`: runs one scenario against the production
// build started with `node --cpu-prof`, and leaves the .cpuprofile under bench/results/profiles/
// (open it in Chrome DevTools → Performance, or summarise it with bench/profile-summary.mjs).
// With --cors, the service allows one browser origin (CORS_ORIGINS) and every request carries it; with
// --tracing, every request is traced and its span exported to a local OTLP receiver (bench/otlp-sink.mjs).
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { DIST, makeStore } from './lib.mjs'
import { featureEnvs, startOtlpSink } from './otlp-sink.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')

const args = process.argv.slice(2)
const OPTIONS = ['--cors', '--tracing']
const unknown = args.filter(a => a.startsWith('--') && !OPTIONS.includes(a))
if (unknown.length > 0) throw new Error(`unknown option ${unknown.join(', ')}; the options are ${OPTIONS.join(', ')}`)
const cors = args.includes('--cors')
const tracing = args.includes('--tracing')
const [scenario = 'list', secondsArg = '10'] = args.filter(a => !a.startsWith('--'))
/** The profile's name after the scenario: the features it ran with. */
const suffix = `${cors ? '-cors' : ''}${tracing ? '-tracing' : ''}`
const seconds = Number(secondsArg)
const ORIGIN = 'https://app.example.com'
const KEY = 'psk_' + 'p'.repeat(43)
const specs = {
  list: { path: '/v1/pets?limit=20' },
  get: { path: '/v1/pets/500' },
  create: { path: '/v1/pets', method: 'POST', body: JSON.stringify({ name: 'Rex', categoryId: 42, status: 'pending' }), headers: { 'content-type': 'application/json' } }
}
const spec = specs[scenario]
if (spec === undefined) throw new Error(`unknown scenario ${scenario}; one of ${Object.keys(specs).join(', ')}`)

const tmp = mkdtempSync(join(tmpdir(), 'petstore-profile-'))
const dbPath = join(tmp, 'p.db')
await makeStore(DIST, dbPath, 1000, [KEY])

const sink = tracing ? await startOtlpSink() : undefined
const outDir = join(ROOT, 'bench/results/profiles')
mkdirSync(outDir, { recursive: true })
const port = 20000 + Math.floor(Math.random() * 20000)
const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${outDir}`, `--cpu-prof-name=${scenario}${suffix}-${Date.now()}.cpuprofile`, join(ROOT, 'dist/server.js')], {
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', RATE_LIMIT_MAX: '1000000000', SHUTDOWN_DRAIN_MS: '0', ...(cors ? { CORS_ORIGINS: ORIGIN } : {}), ...(sink === undefined ? {} : featureEnvs(sink.url)['tracing on']) }
})
for (;;) {
  const ok = await new Promise(resolve => request({ host: '127.0.0.1', port, path: '/readyz' }, res => { res.resume(); resolve(res.statusCode === 200) }).on('error', () => resolve(false)).end())
  if (ok) break
  await new Promise(resolve => setTimeout(resolve, 20))
}
const res = await autocannon({ url: `http://127.0.0.1:${port}${spec.path}`, method: spec.method ?? 'GET', body: spec.body, headers: { authorization: `Bearer ${KEY}`, ...(cors ? { origin: ORIGIN } : {}), ...spec.headers }, connections: 64, duration: seconds })
process.stderr.write(`${scenario}${suffix}: ${Math.round(res.requests.total / res.duration)} req/s, ${res.requests.total} requests, non-2xx ${res.non2xx}\n`)
await new Promise(resolve => { child.once('exit', resolve); child.kill('SIGTERM') })
await sink?.close()
rmSync(tmp, { recursive: true, force: true })
process.stdout.write(`${readdirSync(outDir).filter(f => new RegExp(`^${scenario}${suffix}-\\d+\\.cpuprofile$`).test(f)).sort().map(f => join(outDir, f)).at(-1)}\n`)
