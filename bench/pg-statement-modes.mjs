// `npm run bench:pg-modes` — what each way of talking to PostgreSQL costs, for one primary-key read
// (getPet's query) through node-postgres: named (prepared) or unnamed statements, alone or inside a
// transaction that starts with the service's SET LOCAL prologue (pipelined: one round trip), directly
// and through PgBouncer in transaction mode. 32 concurrent loops over a pool of 10, 3 rounds of
// BENCH_MODES_SECONDS (2) each, interleaved; reports reads/s and the client's CPU per read (the
// figure the scheduler of a shared machine skews least). The measurement behind the choice in
// docs/explanation/scaling.md.
import { cpus, loadavg } from 'node:os'
import pg from 'pg'
import { startCluster } from '../scripts/pg-cluster.mjs'
import { startPgBouncer } from '../scripts/pgbouncer.mjs'

const SECONDS = Number(process.env.BENCH_MODES_SECONDS ?? 2)
const SQL = 'SELECT id, name, category_id, status FROM pets WHERE id = $1::int8'
const PROLOGUE = 'BEGIN; SET LOCAL synchronous_commit = on; SET LOCAL statement_timeout = 5000; SET LOCAL idle_in_transaction_session_timeout = 6000'

const cluster = await startCluster()
const bouncer = await startPgBouncer(cluster.url)
try {
  const setup = new pg.Client({ connectionString: cluster.url })
  await setup.connect()
  await setup.query('CREATE TABLE pets (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name bytea NOT NULL, category_id bigint NOT NULL, status text NOT NULL)')
  await setup.query("INSERT INTO pets (name, category_id, status) SELECT convert_to('pet ' || g, 'UTF8'), g, 'available' FROM generate_series(1, 1000) g")
  await setup.end()

  const modes = {
    'direct, named, timeouts as startup parameters (before)': { url: cluster.url, cfg: { statement_timeout: 5000, idle_in_transaction_session_timeout: 6000 }, named: true },
    'direct, unnamed, alone (reads now)': { url: cluster.url, cfg: { pipeline: true } },
    'direct, unnamed, in a SET LOCAL transaction (writes now)': { url: cluster.url, cfg: { pipeline: true }, tx: true },
    'PgBouncer, unnamed, alone (reads now)': { url: bouncer.url, cfg: { pipeline: true } },
    'PgBouncer, unnamed, in a SET LOCAL transaction (writes now)': { url: bouncer.url, cfg: { pipeline: true }, tx: true }
  }
  /** @param {{ url: string, cfg: object, named?: boolean, tx?: boolean }} mode */
  const run = async ({ url, cfg, named = false, tx = false }) => {
    const pool = new pg.Pool({ connectionString: url, max: 10, ...cfg })
    let n = 0
    const stopAt = Date.now() + SECONDS * 1000
    const cpu0 = process.cpuUsage()
    const t0 = Date.now()
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (Date.now() < stopAt) {
        const values = [String(1 + (n % 1000))]
        const q = named ? { name: 'get_pet', text: SQL, values } : { text: SQL, values }
        let rows
        if (tx) {
          const c = await pool.connect()
          try {
            rows = (await Promise.all([c.query(PROLOGUE), c.query(q), c.query('COMMIT')]))[1].rows
          } finally { c.release() }
        } else {
          rows = (await pool.query(q)).rows
        }
        if (rows.length !== 1) throw new Error('the read found no row')
        n++
      }
    }))
    const seconds = (Date.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    await pool.end()
    return { perS: n / seconds, cpuUs: (cpu.user + cpu.system) / n }
  }
  const results = Object.fromEntries(Object.keys(modes).map(k => [k, []]))
  for (let round = 0; round < 3; round++) {
    for (const [name, mode] of Object.entries(modes)) results[name].push(await run(mode))
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const lines = [
    `node-postgres ${JSON.parse((await import('node:fs')).readFileSync(new URL('../node_modules/pg/package.json', import.meta.url), 'utf8')).version} · ${cpus().length} cores · ${SECONDS}s × 3 rounds · load average ${loadavg()[0].toFixed(1)} · ${new Date().toISOString()}`,
    '',
    '| mode | reads/s (median) | client CPU µs per read (median) |',
    '|---|---:|---:|',
    ...Object.entries(results).map(([name, rs]) => `| ${name} | ${median(rs.map(r => r.perS)).toFixed(0)} | ${median(rs.map(r => r.cpuUs)).toFixed(0)} |`)
  ]
  process.stdout.write(lines.join('\n') + '\n')
} finally {
  await bouncer.destroy()
  await cluster.destroy()
}
