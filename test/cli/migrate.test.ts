import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js'
import { STORES, testDatabaseUrl } from '../helpers/app.js'
import { runCli } from '../helpers/process.js'

for (const store of STORES) {
  describe(`petstore migrate [${store}]`, () => {
    it('applies the pending migrations, then reports the schema up to date', async (t) => {
      const env = { DATABASE_URL: await testDatabaseUrl(t, store) }
      const first = await runCli(['migrate'], env)
      assert.deepEqual([first.code, first.stdout, first.stderr], [0, '', `applied migrations: ${SQLITE_MIGRATIONS.map(m => m.version).join(', ')}\n`])
      const again = await runCli(['migrate'], env)
      assert.deepEqual([again.code, again.stdout, again.stderr], [0, '', 'schema is up to date\n'])
    })
  })
}

describe('petstore migrate [postgres, unreachable]', () => {
  it('exits 1 saying the database is unavailable, without driver text', async () => {
    const res = await runCli(['migrate'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', PG_CONNECT_TIMEOUT_MS: '500' })
    assert.deepEqual([res.code, res.stdout, res.stderr], [1, '', 'petstore: the database is unavailable\n'])
  })
})
