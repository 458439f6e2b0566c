// requires: postgresql
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createTestDatabase } from '../helpers/app.js'
import { runCli } from '../helpers/process.js'

describe('the petstore CLI on PostgreSQL (black box)', () => {
  it('names a PostgreSQL store by host, port, database and user, never the password', async (t) => {
    const url = new URL(await createTestDatabase(t))
    url.password = 'n0t-a-real-secret'
    const env = { DATABASE_URL: url.href }
    // The test cluster trusts local TCP: the password is ignored, so it must just never be echoed.
    const database = url.pathname.slice(1)
    for (const args of [['migrate'], ['keys', 'create', '--name', 'pg'], ['keys', 'list'], ['keys', 'revoke', '1']]) {
      const r = await runCli(args, env)
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
      assert.ok(r.stderr.startsWith(`petstore: store: PostgreSQL database "${database}" on ${url.hostname}:${url.port} as ${url.username}\n`), r.stderr)
      assert.equal((r.stdout + r.stderr).includes('n0t-a-real-secret'), false)
    }
  })
})
