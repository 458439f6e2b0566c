// What the benches share: the production build they measure, a scratch directory and the child
// processes and throwaway servers they start (all removed on any exit, Ctrl-C included), CPU
// pinning, preloaded stores, the service started as `npm start` runs it, plain HTTP calls, one
// measured load run (autocannon) with the server's CPU accounting, medians and percentiles.
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { cpus, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import pg from 'pg'
import { freePort } from '../scripts/lib/local.mjs'

export { freePort }

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
export const DIST = join(ROOT, 'dist')

/** The benches measure the production build: without dist/ they stop before starting anything. */
export function requireBuild () {
  if (!existsSync(join(DIST, 'server.js'))) {
    process.stderr.write('bench: dist/ is missing; run `npm run build` first (the bench measures the production build)\n')
    process.exit(2)
  }
}

/** The API key the benches' stores hold, and the header that presents it. */
export const KEY = 'psk_' + 'b'.repeat(43)
export const AUTH = { authorization: `Bearer ${KEY}` }
/** The requests of the benches' basic rows: a list page and a pet (both kept by the read cache once asked for), a durable create. */
export const LIST = '/v1/pets?limit=20'
export const PET = '/v1/pets/500'
export const CREATE = { path: '/v1/pets', method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Rex', categoryId: 42, status: 'pending' }) }

export const log = (msg) => process.stderr.write(`${msg}\n`)
export const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))
export const fmt = (n, d = 0) => Number.isFinite(n) ? n.toFixed(d) : '–'

export const median = (xs) => { const s = [...xs].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2 }

export function percentile (sorted, p) {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)]
}

/**
 * A scratch directory and everything started into it. spawn() tracks a child (through `wrap`, e.g.
 * CPU pinning); own() takes a throwaway cluster or pooler (anything with destroyNow()). On exit, for
 * whatever reason, the children are killed, the owned servers stopped and every file removed: an
 * 'exit' handler cannot await, so all of it is synchronous.
 * @param {string} prefix
 * @param {{ wrap?: (cmd: string, args: string[]) => [string, string[]] }} [opts]
 */
export function scratch (prefix, { wrap = (cmd, args) => [cmd, args] } = {}) {
  const tmp = mkdtempSync(join(tmpdir(), prefix))
  const children = new Set()
  const owned = new Set()
  process.on('exit', () => {
    for (const c of children) c.kill('SIGKILL')
    for (const o of owned) o.destroyNow()
    rmSync(tmp, { recursive: true, force: true })
  })
  process.on('SIGINT', () => process.exit(130))
  process.on('SIGTERM', () => process.exit(143))
  return {
    tmp,
    /** @param {string} cmd @param {string[]} args @param {import('node:child_process').SpawnOptions} opts */
    spawn (cmd, args, opts) {
      const [c, a] = wrap(cmd, args)
      const child = spawn(c, a, opts)
      children.add(child)
      child.on('exit', () => children.delete(child))
      return child
    },
    /** @template {{ destroyNow: () => void }} T @param {T} server @returns {T} */
    own (server) { owned.add(server); return server },
    /** Once destroyed on the normal path, a server is no longer the exit handler's. */
    disown (server) { owned.delete(server) }
  }
}

export function httpCall (port, method, path, headers = {}, body) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Polls `path` until it answers 200; fails at the deadline, or at once if `child` exits meanwhile. */
export async function waitReady (port, path, deadlineMs, child) {
  const end = Date.now() + deadlineMs
  for (;;) {
    try {
      const r = await httpCall(port, 'GET', path)
      if (r.status === 200) return
    } catch {}
    if (child !== undefined && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`the process serving port ${port} exited (${child.exitCode ?? child.signalCode})`)
    if (Date.now() > end) throw new Error(`no 200 from ${path} on port ${port} within ${deadlineMs} ms`)
    await sleep(2)
  }
}

/**
 * CPU pinning where there are two cores or more and taskset: this process (the load generator) moves
 * to core 1, and `wrap` (for scratch()) starts every server on core 0, so the two do not compete.
 */
export function pinning () {
  const canPin = cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0
  if (canPin) spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' })
  /** @type {(cmd: string, args: string[]) => [string, string[]]} */
  const wrap = (cmd, args) => canPin ? ['taskset', ['-c', '0', cmd, ...args]] : [cmd, args]
  return { canPin, wrap }
}

/**
 * A SQLite store at `path`, made by the build in `dist` (its own migrations and key hashing): `pets`
 * pets (statuses in turn, categories 0–96) and an API key for each of `keys`, inserted straight into
 * the file in one statement, so a million pets take seconds instead of a million HTTP round trips.
 * @param {string} dist @param {string} path @param {number} pets @param {string[]} keys
 */
export async function makeStore (dist, path, pets, keys) {
  const { openSqlite } = await import(join(dist, 'store/sqlite/connection.js'))
  const { migrateSqlite } = await import(join(dist, 'store/sqlite/migrations.js'))
  const { hashApiKey } = await import(join(dist, 'services/api-keys.js'))
  const db = openSqlite(path, 'OFF')
  migrateSqlite(db)
  const insertKey = db.prepare('INSERT INTO api_keys (name, key_hash, created_at) VALUES (?, ?, ?)')
  keys.forEach((k, i) => insertKey.run(`bench-${i}`, hashApiKey(k), new Date().toISOString()))
  db.prepare(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ?)
    INSERT INTO pets (name, category_id, status)
    SELECT 'pet-' || x, x % 97, CASE x % 3 WHEN 0 THEN 'available' WHEN 1 THEN 'pending' ELSE 'sold' END FROM n`).run(pets)
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
  return path
}

/**
 * The production service (dist/server.js) as `npm start` runs it, its log in the scratch directory,
 * ready when /readyz answers 200. One API key drives all the load of a bench: its rate limit is
 * raised out of reach (not turned off), so the limiter still does its per-request work but never
 * answers 429. SIGTERM stops it without the rolling-restart drain (SHUTDOWN_DRAIN_MS=0), so stop()
 * is quick. `env` adds to or overrides that (DATABASE_URL, LOG_LEVEL…). BENCH_NODE_ARGS passes
 * flags to node (e.g. --cpu-prof). readyMs: spawn → first 200 from /readyz.
 * @param {ReturnType<typeof scratch>} session
 * @param {string} name
 * @param {Record<string, string>} env
 * @param {{ sqliteSynchronous?: string }} [storeOptions] the store's options users cannot set (startServer's second argument)
 * @param {string} [root] the checkout whose build runs (another build: bench/compare.mjs)
 */
export async function startService (session, name, env, storeOptions, root = ROOT) {
  const port = await freePort()
  const logFile = join(session.tmp, `${name}.log`)
  const logFd = openSync(logFile, 'a')
  const started = process.hrtime.bigint()
  const entry = storeOptions === undefined
    ? [join(root, 'dist/server.js')]
    : [join(root, 'scripts/serve-with-store-options.mjs'), JSON.stringify(storeOptions)]
  const child = session.spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean), ...entry], {
    cwd: root,
    stdio: ['ignore', logFd, logFd],
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT_MAX: '1000000000', SHUTDOWN_DRAIN_MS: '0', ...env }
  })
  closeSync(logFd)
  try {
    await waitReady(port, '/readyz', 30000, child)
  } catch (err) {
    throw new Error(`${name} did not become ready: ${/** @type {Error} */ (err).message}\n${readFileSync(logFile, 'utf8').slice(-2000)}`)
  }
  const readyMs = Number(process.hrtime.bigint() - started) / 1e6
  return { name, child, port, readyMs, kind: 'service' }
}

/** SIGTERM (the service drains and exits), SIGKILL if it has not exited 15 s later. */
export async function stop (child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  await Promise.race([exited, sleep(15000)])
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

/**
 * One autocannon run against `server` on loopback, 64 connections unless `opts` say otherwise, and
 * the CPU its process used meanwhile. `path` is appended to the server's URL, `rate` caps the total
 * request rate; the rest are autocannon's options. Latencies are taken from every response (float
 * ms, not autocannon's whole-millisecond histogram); errors = transport errors + timeouts + non-2xx.
 * @param {{ child: import('node:child_process').ChildProcess, port: number }} server
 * @param {{ path?: string, rate?: number } & Record<string, any>} opts
 */
export async function measure (server, { path = '', rate, ...opts }) {
  const latencies = []
  const before = cpuSeconds([server.child.pid])
  const inst = autocannon({ url: `http://127.0.0.1:${server.port}${path}`, connections: 64, timeout: 10, overallRate: rate, ...opts })
  inst.on('response', (_client, _status, _bytes, ms) => { latencies.push(ms) })
  const res = await inst
  latencies.sort((a, b) => a - b)
  const used = cpuSeconds([server.child.pid]) - before
  return {
    rps: res.requests.total / res.duration,
    cpuUsPerReq: used * 1e6 / Math.max(1, res.requests.total),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors: res.errors + res.timeouts + res.non2xx,
    cpu: used / res.duration
  }
}

/** utime + stime (all threads) of the given processes, in seconds; a process gone counts nothing. */
export function cpuSeconds (pids) {
  let ticks = 0
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
      ticks += Number(f[11]) + Number(f[12]) // in clock ticks (100/s)
    } catch {}
  }
  return ticks / 100
}

/**
 * A fresh database `name` on the server `adminUrl` points at, migrated by the service's own
 * migrations (from dist/), holding one API key with the given hash; `seed(client)`, when given,
 * adds what else the bench needs. Returns its URL.
 * @param {string} adminUrl @param {string} name @param {string} keyHash
 * @param {(client: pg.Client) => Promise<void>} [seed]
 */
export async function createDatabase (adminUrl, name, keyHash, seed) {
  const { migratePostgres } = await import(join(DIST, 'store/postgres/migrations.js'))
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const c = new pg.Client({ connectionString: url.href })
  await c.connect()
  try {
    await migratePostgres(c)
    await c.query('INSERT INTO api_keys (name, key_hash, created_at) VALUES ($1, $2, now())', ['bench', keyHash])
    if (seed !== undefined) await seed(c)
  } finally {
    await c.end()
  }
  return url.href
}
