import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { STORE_OPENING_MESSAGE } from '../../src/errors.js'
import { tempDir } from '../helpers/app.js'
import { holdLock } from '../helpers/sqlite-lock.js'
import { checkResponse } from '../helpers/conformance.js'
import { SERVING, startServer, waitForOutput, type RunningServer } from '../helpers/process.js'
import { makeKey } from '../helpers/server-process.js'

/*
 * The compiled server over an existing SQLite file checks it (quick_check) in a process of its own
 * while it listens. A lock another connection holds on the file keeps the check waiting (at most
 * BUSY_TIMEOUT_MS, 5 s: the requests below are made well within it), which makes that window one a
 * test can look into.
 */

async function get (server: RunningServer, url: string, init: RequestInit = {}) {
  const res = await fetch(`${server.url}${url}`, init)
  const answer = { method: init.method ?? 'GET', url, status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() }
  checkResponse(answer)
  return answer
}

const OPENING = { code: 'service_unavailable', message: STORE_OPENING_MESSAGE, status: 503 }

describe('a SQLite start checks its file while it listens [compiled server]', () => {
  it('while the check waits: /healthz 200, /readyz and every /v1 request 503 with Retry-After (nothing created); once it passed, 200', async (t) => {
    const db = join(tempDir(t), 'petstore.db')
    const auth = { authorization: `Bearer ${await makeKey(db)}` }
    const release = holdLock(t, db)
    const server = await startServer(t, { DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'info' }, undefined, { untilServing: false })

    const health = await get(server, '/healthz')
    assert.deepEqual([health.status, JSON.parse(health.body)], [200, { status: 'ok' }])
    const waiting = [
      await get(server, '/readyz'),
      await get(server, '/v1/pets', { headers: auth }),
      await get(server, '/v1/pets'),
      await get(server, '/v1/pets', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' }),
      // A target that reaches the /v1 routes without starting with /v1 as sent.
      await get(server, '/%761/pets', { headers: auth })
    ]
    for (const answer of waiting) {
      assert.equal(answer.status, 503, `${answer.method} ${answer.url}`)
      assert.deepEqual(JSON.parse(answer.body), OPENING, `${answer.method} ${answer.url}`)
      assert.equal(answer.headers['retry-after'], '1')
    }
    assert.equal((await get(server, '/openapi.json')).status, 200, 'what needs no store is served')
    assert.doesNotMatch(server.stdout(), /"dependency":|is unavailable/, 'a start is not logged as a store outage (outages.ts)')

    assert.doesNotMatch(server.stdout(), SERVING)
    release()
    await waitForOutput(server, SERVING)
    assert.equal((await get(server, '/readyz')).status, 200)
    const pets = await get(server, '/v1/pets', { headers: auth })
    assert.deepEqual([pets.status, JSON.parse(pets.body)], [200, []], 'the create refused while starting wrote nothing')
    server.child.kill('SIGTERM')
    assert.equal((await server.exited).code, 0)
  })

  it('SIGTERM during the check: the shutdown does not wait for it (exit 0, shut down cleanly) and nothing is written into the file', async (t) => {
    const db = join(tempDir(t), 'petstore.db')
    await makeKey(db)
    // Before the lock: closing any descriptor of the file drops this process's POSIX locks on it.
    const before = readFileSync(db)
    holdLock(t, db)
    const server = await startServer(t, { DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'info' }, undefined, { untilServing: false })
    assert.equal((await get(server, '/readyz')).status, 503)
    server.child.kill('SIGTERM')
    const { code } = await server.exited
    assert.equal(code, 0, server.stdout() + server.stderr())
    assert.match(server.stdout(), /"msg":"shut down cleanly"/)
    assert.doesNotMatch(server.stdout(), SERVING)
    assert.equal(server.stderr(), '')
    assert.deepEqual(readFileSync(db), before)
  })
})
