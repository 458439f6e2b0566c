import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { describeLocation } from '../../src/store/location.js'
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js'
import { STORES, testDatabaseUrl } from '../helpers/app.js'
import { runCli } from '../helpers/process.js'

for (const store of STORES) {
  describe(`petstore migrate [${store}]`, () => {
    it('applies the pending migrations, then reports the schema up to date', async (t) => {
      const env = { DATABASE_URL: await testDatabaseUrl(t, store) }
      const storeLine = `petstore: store: ${describeLocation(loadConfig(env).database)}\n`
      const first = await runCli(['migrate'], env)
      assert.deepEqual([first.code, first.stdout, first.stderr], [0, '', `${storeLine}applied migrations: ${SQLITE_MIGRATIONS.map(m => m.version).join(', ')}\n`])
      const again = await runCli(['migrate'], env)
      assert.deepEqual([again.code, again.stdout, again.stderr], [0, '', `${storeLine}schema is up to date\n`])
    })
  })
}

describe('petstore migrate [postgres, unreachable]', () => {
  it('exits 1 naming the host, port, cause and setting to look at, never the password', async () => {
    const res = await runCli(['migrate'], { DATABASE_URL: 'postgres://postgres:pw-9f3a@127.0.0.1:1/none', PG_CONNECT_TIMEOUT_MS: '500' })
    assert.deepEqual([res.code, res.stdout], [1, ''])
    assert.match(res.stderr, /^petstore: store: PostgreSQL database "none" on 127\.0\.0\.1:1 as postgres\npetstore: PostgreSQL at 127\.0\.0\.1:1 \(database "none", user "postgres"\): connection refused \(ECONNREFUSED\); check the host and port in DATABASE_URL, and that PostgreSQL \(or the pooler\) is running there\n$/)
    assert.doesNotMatch(res.stderr, /pw-9f3a/)
  })

  it('a malformed %-escape in DATABASE_URL: one line naming DATABASE_URL, never a bare "URI malformed"', async () => {
    const user = await runCli(['migrate'], { DATABASE_URL: 'postgres://%zz@127.0.0.1:1/db' })
    assert.deepEqual([user.code, user.stdout, user.stderr], [1, '', 'petstore: invalid configuration: DATABASE_URL: the user or database name has a malformed %-escape (write a % itself as %25)\n'])
    // pg decodes the password itself: its refusal is described as any other connection failure.
    const password = await runCli(['migrate'], { DATABASE_URL: 'postgres://u:%c3%28@127.0.0.1:1/db' })
    assert.deepEqual([password.code, password.stdout], [1, ''])
    assert.match(password.stderr, /\npetstore: PostgreSQL at 127\.0\.0\.1:1 \(database "db", user "u"\): URI malformed; check DATABASE_URL and the server's log\n$/)
  })
})
