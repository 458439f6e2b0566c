/*
 * The built server, started and stopped again and again on one SQLite file, as a process manager or
 * a developer does: every start serves /readyz, every SIGTERM ends in exit code 0, never in a
 * signal (better-sqlite3 12 aborted in a destructor on Node >= 24.19 at exactly this point).
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/process.js'

const STARTS = 5

describe(`dist/server.js started and stopped ${STARTS} times on SQLite (Node ${process.versions.node})`, () => {
  it('serves /readyz after each start and exits 0 on each SIGTERM, with no signal', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, METRICS_PORT: 'off' }
    const exits = []
    for (let i = 0; i < STARTS; i++) {
      const server = await startServer(t, env)
      const ready = await fetch(`${server.url}/readyz`)
      assert.equal(ready.status, 200, `start ${i + 1}: /readyz answered ${ready.status}`)
      server.child.kill('SIGTERM')
      exits.push(await server.exited)
    }
    assert.deepEqual(exits, Array.from({ length: STARTS }, () => ({ code: 0, signal: null })))
  })
})
