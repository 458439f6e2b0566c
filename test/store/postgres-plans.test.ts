// requires: postgresql
/*
 * A read-cache miss on PostgreSQL costs one query; it must stay an index walk of a few rows however
 * large the table grows. This test asks the planner (EXPLAIN with the parameters bound, as the store
 * sends them) about the store's own read statements over a table of 100,000 pets whose statuses are
 * skewed (one `sold` in a thousand): no sequential scan anywhere; get and plain pages walk the
 * primary key in order (no sort); a filtered page walks an index too — for a rare status the
 * planner may fetch that status's few rows through the (status, id) index and sort them, which is
 * bounded by the rarity it saw.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg from 'pg'
import { loadConfig } from '../../src/config/index.js'
import { openStore } from '../../src/store/index.js'
import { PET_READS } from '../../src/store/postgres/index.js'
import { createTestDatabase } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

interface PlanNode { 'Node Type': string, 'Index Name'?: string, Plans?: PlanNode[] }

function nodes (plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)]
}

describe('PostgreSQL read plans', () => {
  it('serves getPet and every list page from an index, never a sequential scan', async (t) => {
    const url = await createTestDatabase(t)
    // The store's own migrations make the schema.
    await (await openStore(loadConfig({ DATABASE_URL: url }))).close()
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    onCleanup(t, async () => await client.end())
    // After-hooks run in order of registration: the database is dropped (WITH FORCE) first, and the
    // server's termination of this connection is expected.
    client.on('error', () => {})
    await client.query(`INSERT INTO pets (name, category_id, status)
      SELECT convert_to('pet ' || x, 'UTF8'), x % 97, CASE WHEN x % 1000 = 0 THEN 'sold' WHEN x % 2 = 0 THEN 'pending' ELSE 'available' END
      FROM generate_series(1, 100000) AS x`)
    await client.query('ANALYZE pets')

    const explain = async (text: string, values: unknown[]): Promise<PlanNode[]> => {
      const res = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, values)
      return nodes(res.rows[0]!['QUERY PLAN'][0]!.Plan)
    }
    // [what, statement, parameters, the index it must use ('' = either), whether a sort may appear]
    const cases: Array<[string, string, unknown[], string, boolean]> = [
      ['get', PET_READS.get, ['77777'], 'pets_pkey', false],
      ['first page', PET_READS.page, ['-9223372036854775808', 21], 'pets_pkey', false],
      ['a page deep in the table', PET_READS.page, ['90000', 21], 'pets_pkey', false],
      ['a page of a rare status', PET_READS.pageWithStatus, ['50000', 21, 'sold'], 'pets_status_id', true],
      ['the first page of a rare status', PET_READS.pageWithStatus, ['-9223372036854775808', 101, 'sold'], 'pets_status_id', true],
      ['a page of a common status', PET_READS.pageWithStatus, ['50000', 21, 'available'], '', false]
    ]
    for (const [what, text, values, index, maySort] of cases) {
      const plan = await explain(text, values)
      const shape = `${what}: ${plan.map(n => n['Node Type'] + (n['Index Name'] !== undefined ? ` (${n['Index Name']})` : '')).join(' → ')}`
      const types = plan.map(n => n['Node Type'])
      assert.ok(!types.includes('Seq Scan'), shape)
      if (!maySort) assert.ok(!types.includes('Sort'), shape)
      const scans = plan.filter(n => ['Index Scan', 'Index Only Scan', 'Bitmap Index Scan'].includes(n['Node Type']))
      assert.equal(scans.length, 1, shape)
      if (index !== '') assert.equal(scans[0]!['Index Name'], index, shape)
    }
  })
})
