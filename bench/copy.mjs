// Bench (not a test): `petstore copy` of a SQLite store with N pets into a fresh PostgreSQL database
// of a throwaway local cluster, through the real binary. Reports the wall time, the copy's own
// figures from its --json summary (seconds, peak RSS) and the machine's load average.
//   npm run build && node bench/copy.mjs [N ...]      (default: 100000 1000000)
// Writes bench/results/copy-latest.json. Needs PostgreSQL server binaries (as the tests do).
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { startCluster } from '../scripts/pg-cluster.mjs'

const CLI = new URL('../dist/cli/index.js', import.meta.url).pathname
const sizes = process.argv.slice(2).map(Number).filter(n => n > 0)
if (sizes.length === 0) sizes.push(100_000, 1_000_000)

function run (args, env) {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { err += d })
    child.once('error', reject)
    child.once('exit', code => code === 0
      ? resolve({ out, err, wallSeconds: (performance.now() - started) / 1000 })
      : reject(new Error(`petstore ${args.join(' ')} exited ${code}: ${err}`)))
  })
}

/** A SQLite store holding n pets (names of 8–40 characters, every status), one key and the cursor key. */
async function seed (path, n) {
  await run(['migrate'], { DATABASE_URL: `sqlite:${path}` })
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  const statuses = ['available', 'pending', 'sold']
  const insert = db.prepare('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)')
  db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run(`pet number ${i} ${'x'.repeat(i % 29)}`, i % 1000, statuses[i % 3])
    db.prepare('INSERT INTO api_keys (name, key_hash, created_at) VALUES (?, ?, ?)').run('bench', '0'.repeat(64), new Date().toISOString())
    db.prepare('INSERT INTO settings (name, value) VALUES (?, ?)').run('cursor_hmac_key', 'ab'.repeat(32))
  })()
  db.close()
}

const dir = mkdtempSync(join(tmpdir(), 'petstore-copy-bench-'))
const cluster = await startCluster()
const results = []
try {
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  for (const n of sizes) {
    const file = join(dir, `pets-${n}.db`)
    await seed(file, n)
    const dbName = `copy_${n}`
    await admin.query(`CREATE DATABASE ${dbName}`)
    const target = new URL(cluster.url)
    target.pathname = `/${dbName}`
    const loadBefore = loadavg()
    const r = await run(['copy', '--to', target.href, '--json'], { DATABASE_URL: `sqlite:${file}` })
    const loadAfter = loadavg()
    const s = JSON.parse(r.out)
    if (!s.verified) throw new Error('copy not verified')
    const row = {
      pets: n,
      sqliteBytes: statSync(file).size,
      wallSeconds: Math.round(r.wallSeconds * 10) / 10,
      copySeconds: s.seconds,
      copyPhaseSeconds: s.copySeconds,
      petsPerSecond: Math.round(n / s.seconds),
      peakRssMB: Math.round(s.peakRssBytes / 1e5) / 10,
      loadAverage1mBefore: Math.round(loadBefore[0] * 10) / 10,
      loadAverage1mAfter: Math.round(loadAfter[0] * 10) / 10,
      petsSha256: s.target.petsSha256
    }
    results.push(row)
    console.log(JSON.stringify(row))
    rmSync(file, { force: true })
  }
  await admin.end()
} finally {
  await cluster.destroy()
  rmSync(dir, { recursive: true, force: true })
}

const report = { date: new Date().toISOString(), node: process.version, cpu: cpus()[0]?.model, cores: cpus().length, results }
mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
writeFileSync(new URL('./results/copy-latest.json', import.meta.url), JSON.stringify(report, null, 2) + '\n')
console.log('\n| pets | SQLite file | copy + verify | pets/s | peak RSS | load average (1 min, before → after) |')
console.log('|---:|---:|---:|---:|---:|---|')
for (const r of results) {
  console.log(`| ${r.pets.toLocaleString('en')} | ${Math.round(r.sqliteBytes / 1e6)} MB | ${r.copySeconds} s | ${r.petsPerSecond.toLocaleString('en')} | ${r.peakRssMB} MB | ${r.loadAverage1mBefore} → ${r.loadAverage1mAfter} |`)
}
