// `npm run bench:pg-create-shapes` — what one batch of creates costs PostgreSQL and the client
// (node-postgres, pipeline mode, as the store uses it) in each shape the batch's transaction could
// take, without HTTP: the same 30-row insert under the insert lock, BATCHES times in a row per shape,
// ROUNDS rounds interleaved. PostgreSQL on core 0, this process on core 1 (taskset, when there are
// two cores). Prints PostgreSQL CPU (postmaster and backends, /proc schedstat) and client CPU per
// batch. Shapes:
// - pipelined: BEGIN; SET LOCAL ×3 (one message) + the CTE insert + COMMIT, unnamed (the store until 2026-11-23);
// - pipelined, named: the same with the insert named;
// - one statement, named / unnamed: the insert sets what it needs with set_config and runs in its
//   own implicit transaction (the store now: named directly, unnamed behind a pooler);
// - PL/pgSQL function, unnamed: the same work in a function, whose plans PostgreSQL caches per
//   server connection — the shape that keeps the saving behind a pooler;
// - set_config; migration 3 function, one simple-protocol message: the store now (insertMessage):
//   a first statement sets synchronous_commit and statement_timeout, which the server arms for the
//   function call after it; values written as literals (the simple protocol has no parameters).
// BENCH_SHAPES_BATCHES (1000), BENCH_SHAPES_ROUNDS (3), BENCH_SHAPES_ROWS (30); BENCH_SHAPES_ONLY, a
// regular expression, keeps the shapes whose name it matches.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { startCluster } from '../scripts/pg-cluster.mjs'
import { createDatabase, DIST, log, requireBuild } from './lib.mjs'
import { cpuMeter, serverPids } from './pg-reads-lib.mjs'

requireBuild()
const { PET_INSERT_LOCK_KEY, insertMessage, insertPrologue } = await import(join(DIST, 'store/postgres/index.js'))
const BATCHES = Number(process.env.BENCH_SHAPES_BATCHES ?? 1000)
const ROUNDS = Number(process.env.BENCH_SHAPES_ROUNDS ?? 3)
const ROWS = Number(process.env.BENCH_SHAPES_ROWS ?? 30)
const ONLY = new RegExp(process.env.BENCH_SHAPES_ONLY ?? '')

const canPin = cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0
if (canPin) spawnSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' })
const cluster = await startCluster()
try {
  if (canPin) spawnSync('taskset', ['-a', '-cp', '0', readFileSync(join(cluster.dir, 'postmaster.pid'), 'utf8').split('\n')[0]], { stdio: 'ignore' })
  const url = await createDatabase(cluster.url, 'shapes', 'unused')
  const client = new pg.Client({ connectionString: url, pipeline: true })
  await client.connect()
  const lock = PET_INSERT_LOCK_KEY.toString()
  const prologue = 'BEGIN; SET LOCAL synchronous_commit = on; SET LOCAL statement_timeout = 5000; SET LOCAL idle_in_transaction_session_timeout = 6000'
  const source = 'unnest($1::bytea[], $2::int8[], $3::text[]) WITH ORDINALITY AS t(name, category_id, status, ord)'
  const pipelined = `WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock($4::int8))
    INSERT INTO pets (name, category_id, status) SELECT t.name, t.category_id, t.status FROM l, ${source} ORDER BY t.ord RETURNING id`
  const single = `WITH s AS MATERIALIZED (SELECT set_config('synchronous_commit', 'on', true), set_config('lock_timeout', $5::text, true)),
    l AS MATERIALIZED (SELECT pg_advisory_xact_lock($4::int8) FROM s)
    INSERT INTO pets (name, category_id, status) SELECT t.name, t.category_id, t.status FROM l, ${source} ORDER BY t.ord RETURNING id`
  await client.query(`CREATE FUNCTION insert_pets(names bytea[], cats int8[], statuses text[], lock_key int8, lock_ms text) RETURNS SETOF int8
    LANGUAGE plpgsql AS $f$
    BEGIN
      PERFORM set_config('synchronous_commit', 'on', true), set_config('lock_timeout', lock_ms, true);
      PERFORM pg_advisory_xact_lock(lock_key);
      RETURN QUERY INSERT INTO pets (name, category_id, status)
        SELECT t.name, t.category_id, t.status FROM unnest(names, cats, statuses) WITH ORDINALITY AS t(name, category_id, status, ord)
        ORDER BY t.ord RETURNING id;
    END $f$`)
  const call = 'SELECT insert_pets($1::bytea[], $2::int8[], $3::text[], $4::int8, $5::text) AS id'
  const prologue5000 = insertPrologue(5000)
  const pets = () => Array.from({ length: ROWS }, () => ({ name: 'Rex', categoryId: 42n, status: 'pending' }))
  const values = () => [
    Array.from({ length: ROWS }, () => Buffer.from('Rex')), Array.from({ length: ROWS }, () => '42'),
    Array.from({ length: ROWS }, () => 'pending'), lock
  ]
  /** @type {Record<string, () => Promise<unknown>>} */
  const shapes = {
    'pipelined transaction, unnamed': async () => await Promise.all([client.query(prologue), client.query({ text: pipelined, values: values() }), client.query('COMMIT')]),
    'pipelined transaction, insert named': async () => await Promise.all([client.query(prologue), client.query({ name: 'pipelined', text: pipelined, values: values() }), client.query('COMMIT')]),
    'one statement, named': async () => await client.query({ name: 'single', text: single, values: [...values(), '5000'] }),
    'one statement, unnamed': async () => await client.query({ text: single, values: [...values(), '5000'] }),
    'PL/pgSQL function, unnamed': async () => await client.query({ text: call, values: [...values(), '5000'] }),
    'set_config; migration 3 function, one simple-protocol message': async () => await client.query(insertMessage(prologue5000, pets()))
  }
  /** @type {Map<string, Array<{ pg: number, client: number }>>} */
  const results = new Map()
  const load0 = loadavg()
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(shapes).filter(([n]) => ONLY.test(n))) {
      for (let i = 0; i < 20; i++) await run()
      const pgCpu = cpuMeter(() => serverPids(cluster.dir))
      const c0 = process.cpuUsage()
      for (let i = 0; i < BATCHES; i++) await run()
      const c = process.cpuUsage(c0)
      const r = { pg: pgCpu() / 1e3 / BATCHES, client: (c.user + c.system) / BATCHES }
      if (!results.has(name)) results.set(name, [])
      results.get(name)?.push(r)
      log(`  ${round} ${name}: PostgreSQL ${r.pg.toFixed(0)} µs, client ${r.client.toFixed(0)} µs per batch`)
    }
  }
  await client.end()
  const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN
  const lines = [
    `${ROWS} rows per batch × ${BATCHES} batches × ${ROUNDS} rounds, medians · load average ${load0.map(l => l.toFixed(1)).join(' ')} before, ${loadavg().map(l => l.toFixed(1)).join(' ')} after · ${new Date().toISOString()}`,
    '',
    '| shape | PostgreSQL µs/batch | client µs/batch | PostgreSQL µs/row | client µs/row |',
    '|---|---:|---:|---:|---:|'
  ]
  for (const [name, rs] of results) {
    const p = median(rs.map(r => r.pg))
    const c = median(rs.map(r => r.client))
    lines.push(`| ${name} | ${p.toFixed(0)} | ${c.toFixed(0)} | ${(p / ROWS).toFixed(1)} | ${(c / ROWS).toFixed(1)} |`)
  }
  process.stdout.write(lines.join('\n') + '\n')
} finally {
  await cluster.destroy()
}
