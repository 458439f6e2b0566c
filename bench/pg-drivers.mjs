// `npm run bench:pg-drivers` — what one PostgreSQL read costs, by driver and protocol, with no HTTP
// around it: getPet's query (a random id) and listPets' (a page of 21 rows after a random id) over
// a 1M-pet table, at a fixed, modest rate (open loop), directly and through PgBouncer in transaction
// mode. Reports, per read: the client's CPU (this process), PostgreSQL's CPU (postmaster and every
// backend) and PgBouncer's, from /proc schedstat, and latency percentiles. Modes are interleaved
// over BENCH_DRIVERS_ROUNDS (3) rounds of BENCH_DRIVERS_SECONDS (3) at BENCH_DRIVERS_RATE (1000/s);
// medians are printed. The measurement behind the driver and protocol choice in
// docs/explanation/performance.md.
//
// `postgres` (porsager's driver) is not a dependency of the service: install it for this bench only
// (`npm install --no-save postgres@3`); without it its rows are skipped.
import { cpus, loadavg } from 'node:os'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { startCluster } from '../scripts/pg-cluster.mjs'
import { startPgBouncer } from '../scripts/pgbouncer.mjs'
import { cpuMeter, fixedRate, makePetsDb, percentile, serverPids } from './pg-reads-lib.mjs'

const { migratePostgres } = await import('../dist/store/postgres/migrations.js').catch(() => {
  process.stderr.write('bench: dist/ is missing; run `npm run build` first\n')
  process.exit(2)
})
// Through a variable: the module is optional, so the type checker must not require it.
const optional = 'postgres'
let postgres
try { postgres = (await import(optional)).default } catch {}

const SECONDS = Number(process.env.BENCH_DRIVERS_SECONDS ?? 3)
const ROUNDS = Number(process.env.BENCH_DRIVERS_ROUNDS ?? 3)
const RATE = Number(process.env.BENCH_DRIVERS_RATE ?? 1000)
const PETS = Number(process.env.BENCH_DRIVERS_PETS ?? 1_000_000)
const POOL = 10
const COLS = 'id, name, category_id, status'
const GET = `SELECT ${COLS} FROM pets WHERE id = $1::int8`
const LIST = `SELECT ${COLS} FROM pets WHERE id > $1::int8 ORDER BY id LIMIT $2`
const INT8_OID = 20
const pgTypes = { getTypeParser: (oid, format) => oid === INT8_OID && format !== 'binary' ? (v) => BigInt(v) : pg.types.getTypeParser(oid, format ?? 'text') }

const randomId = () => 1 + Math.floor(Math.random() * PETS)
/** The query and its check, as `(query(text, values, name) → rows)`: values are strings, literals inlined by `literal` modes. */
const queries = {
  get: { text: GET, values: () => [String(randomId())], rows: 1 },
  list: { text: LIST, values: () => [String(randomId() - 100), '21'], rows: 21 }
}
/** $1, $2 … replaced by the values as SQL literals (they are decimal integers here). */
const inline = (text, values) => text.replace(/\$(\d+)/g, (_, i) => values[Number(i) - 1])

function check (rows, n) {
  if (rows.length !== n) throw new Error(`expected ${n} rows, got ${rows.length}`)
  const r = rows[0]
  if (typeof r.id !== 'bigint' || typeof r.category_id !== 'bigint' || !Buffer.isBuffer(r.name)) throw new Error(`row types: ${JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v])))}`)
}

/** A client of one kind: `run(text, values, name)` resolves with rows; `end()`. */
const drivers = {
  'pg, unnamed (extended)': (url) => {
    const pool = new pg.Pool({ connectionString: url, max: POOL, types: pgTypes, pipeline: true })
    return { run: async (q, v) => (await pool.query({ text: q, values: v })).rows, end: () => pool.end() }
  },
  'pg, named (prepared)': (url) => {
    const pool = new pg.Pool({ connectionString: url, max: POOL, types: pgTypes, pipeline: true })
    return { run: async (q, v, name) => (await pool.query({ name, text: q, values: v })).rows, end: () => pool.end() }
  },
  'pg, simple (literals inlined)': (url) => {
    const pool = new pg.Pool({ connectionString: url, max: POOL, types: pgTypes, pipeline: true })
    return { run: async (q, v) => (await pool.query(inline(q, v))).rows, end: () => pool.end() }
  }
}
if (postgres !== undefined) {
  const opts = (prepare) => ({ max: POOL, prepare, fetch_types: false, types: { bigint: postgres.BigInt }, onnotice: () => {} })
  Object.assign(drivers, {
    'postgres, prepare: false': (url) => {
      const sql = postgres(url, opts(false))
      return { run: async (q, v) => await sql.unsafe(q, v), end: () => sql.end() }
    },
    'postgres, prepare: true': (url) => {
      const sql = postgres(url, opts(true))
      return { run: async (q, v) => await sql.unsafe(q, v), end: () => sql.end() }
    },
    'postgres, simple (literals inlined)': (url) => {
      const sql = postgres(url, opts(false))
      return { run: async (q, v) => await sql.unsafe(inline(q, v)).simple(), end: () => sql.end() }
    }
  })
}

const cluster = await startCluster()
const bouncer = await startPgBouncer(cluster.url)
try {
  const t = Date.now()
  const url = await makePetsDb(pg, cluster.url, 'drivers', PETS, migratePostgres)
  process.stderr.write(`${PETS} pets in ${Date.now() - t} ms\n`)
  const bouncerUrl = url.replace(`:${cluster.port}/`, `:${bouncer.port}/`)
  const bouncerPid = Number(readFileSync(join(bouncer.dir, 'pgbouncer.pid'), 'utf8').trim())

  const cases = []
  for (const [route, u] of [['direct', url], ['PgBouncer', bouncerUrl]]) {
    for (const [name, make] of Object.entries(drivers)) {
      // Named statements break on a transaction-mode pooler that does not track them (Debian's 1.18).
      if (route === 'PgBouncer' && /named|prepare: true/.test(name) && !/unnamed/.test(name)) continue
      for (const qn of Object.keys(queries)) cases.push({ label: `${qn} · ${route} · ${name}`, route, url: u, make, qn })
    }
  }
  const results = new Map(cases.map(c => [c.label, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) {
      const client = c.make(c.url)
      const q = queries[c.qn]
      // Warm: connections opened, statements prepared where named.
      for (let i = 0; i < 200; i++) check(await client.run(q.text, q.values(), c.qn), q.rows)
      const server = cpuMeter(() => serverPids(cluster.dir))
      const pooler = cpuMeter(() => [bouncerPid])
      const cpu0 = process.cpuUsage()
      const r = await fixedRate(RATE, SECONDS, async () => check(await client.run(q.text, q.values(), c.qn), q.rows))
      const cpu = process.cpuUsage(cpu0)
      const serverNs = server(); const poolerNs = pooler()
      await client.end()
      if (r.failures > 0) throw new Error(`${c.label}: ${r.failures} failures`)
      results.get(c.label).push({
        client: (cpu.user + cpu.system) / r.done,
        server: serverNs / 1000 / r.done,
        pooler: c.route === 'PgBouncer' ? poolerNs / 1000 / r.done : 0,
        p50: percentile(r.latencies, 50),
        p99: percentile(r.latencies, 99)
      })
      process.stderr.write('.')
    }
  }
  process.stderr.write('\n')
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const version = (p) => { try { return JSON.parse(readFileSync(new URL(`../node_modules/${p}/package.json`, import.meta.url), 'utf8')).version } catch { return 'absent' } }
  const lines = [
    `pg ${version('pg')} · postgres ${version('postgres')} · ${cpus().length} cores · ${RATE} reads/s × ${SECONDS}s × ${ROUNDS} rounds, pool ${POOL}, ${PETS} pets · load average ${loadavg().map(l => l.toFixed(1)).join(' ')} · ${new Date().toISOString()}`,
    '',
    '| query · route · driver, protocol | client µs/read | PostgreSQL µs/read | PgBouncer µs/read | total µs/read | p50 ms | p99 ms |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...[...results].map(([label, rs]) => {
      const m = (k) => median(rs.map(r => r[k]))
      const total = median(rs.map(r => r.client + r.server + r.pooler))
      return `| ${label} | ${m('client').toFixed(0)} | ${m('server').toFixed(0)} | ${m('pooler') ? m('pooler').toFixed(0) : ''} | ${total.toFixed(0)} | ${m('p50').toFixed(2)} | ${m('p99').toFixed(2)} |`
    })
  ]
  process.stdout.write(lines.join('\n') + '\n')
} finally {
  await bouncer.destroy()
  await cluster.destroy()
}
