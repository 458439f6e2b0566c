// requires: postgresql, pgbouncer
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { startCluster } from '../../scripts/pg-cluster.mjs'
import { startPgBouncer } from '../../scripts/pgbouncer.mjs'
import { createDatabaseOn } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'
import { runCli, startServer, waitForOutput, type RunningServer } from '../helpers/process.js'

/** The outage log's summary interval (src/logging/outages.ts). */
const SUMMARY_EVERY_MS = 5000
const OUTAGE_MS = 8000

interface Line { level: number, msg: string, dependency?: string, cause?: string, failed?: number, err?: unknown }

/** The lines an instance wrote after `from` (an offset into its stdout), but its access lines. */
function nonAccessLines (server: RunningServer, from: number): Line[] {
  return server.stdout().slice(from).split('\n').filter(l => l !== '')
    .map(l => JSON.parse(l) as Line)
    .filter(l => l.msg !== 'request completed')
}

describe('the log of a PostgreSQL outage', () => {
  it('is one line when it goes (with the cause), a summary at most every 5 s, one line when it is back; no stack, per instance, direct and through PgBouncer', async (t) => {
    const cluster = await startCluster({ maxConnections: 60 })
    onCleanup(t, () => cluster.destroy())
    const bouncer = await startPgBouncer(cluster.url, { server_login_retry: 1, query_wait_timeout: 1 })
    onCleanup(t, () => bouncer.destroy())
    const direct = await createDatabaseOn(cluster.url, 'outagelog')
    const pooled = new URL(bouncer.url)
    pooled.pathname = '/outagelog'
    const env = { PG_CONNECT_TIMEOUT_MS: '500', PG_STATEMENT_TIMEOUT_MS: '500', RATE_LIMIT_MAX: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json' }
    const made = await runCli(['keys', 'create', '--create', '--name', 'outage-log'], { DATABASE_URL: direct })
    assert.equal(made.code, 0, made.stderr)
    const headers = { authorization: `Bearer ${made.stdout.trim()}`, 'content-type': 'application/json' }
    const servers = [
      await startServer(t, { ...env, DATABASE_URL: direct }),
      // Named statements off from the start behind this pooler (1.18 does not track them): else the
      // one-time line that switches them off can fall inside the outage.
      await startServer(t, { ...env, DATABASE_URL: pooled.href, PG_PREPARED_STATEMENTS: 'off' })
    ]

    // Creates from three clients per instance, and a load balancer's /readyz every 250 ms.
    const failed = [0, 0]
    const created = [0, 0]
    let running = true
    let counting = false
    const send = async (s: number, path: string, init: RequestInit) => {
      const res = await fetch(`${servers[s]!.url}${path}`, init)
      await res.arrayBuffer()
      if (counting && res.status === 503) failed[s]!++
      if (res.status === 201) created[s]!++
      if (res.status !== 201 && res.status !== 200) await new Promise(resolve => setTimeout(resolve, 20))
    }
    const load = Promise.all(servers.flatMap((_, s) => [
      ...Array.from({ length: 3 }, async (_w, w) => {
        for (let i = 0; running; i++) await send(s, '/v1/pets', { method: 'POST', headers, body: JSON.stringify({ name: `w${w} ${i}`, categoryId: 1 }) })
      }),
      (async () => {
        while (running) {
          await send(s, '/readyz', {})
          await new Promise(resolve => setTimeout(resolve, 250))
        }
      })()
    ]))
    let downFor = 0
    try {
      for (let waited = 0; created.some(n => n < 20); waited += 20) {
        if (waited > 60000) throw new Error('no creates before the outage')
        await new Promise(resolve => setTimeout(resolve, 20))
      }
      // Every line from here on belongs to the outage.
      const marks = servers.map(s => s.stdout().length)
      counting = true
      const downAt = Date.now()
      await cluster.stop()
      await new Promise(resolve => setTimeout(resolve, OUTAGE_MS))
      await cluster.start()
      for (const s of servers) await waitForOutput(s, /"msg":"PostgreSQL \(DATABASE_URL\) is back after/)
      downFor = Date.now() - downAt
      running = false
      await load

      for (const [s, server] of servers.entries()) {
        const lines = nonAccessLines(server, marks[s]!)
        const which = s === 0 ? 'direct' : 'through PgBouncer'
        const going = lines.filter(l => l.msg.startsWith('PostgreSQL (DATABASE_URL) is unavailable: requests that need the store are answered 503'))
        const summaries = lines.filter(l => l.msg.startsWith('PostgreSQL (DATABASE_URL) is still unavailable: '))
        const back = lines.filter(l => l.msg.startsWith('PostgreSQL (DATABASE_URL) is back after '))
        assert.ok(failed[s]! >= 20, `${which}: the outage failed ${failed[s]} requests`)
        assert.deepEqual(lines, [...going, ...summaries, ...back], `${which}: nothing else is logged but the access lines`)
        assert.equal(going.length, 1, which)
        assert.equal(going[0]!.level, 50)
        assert.equal(going[0]!.dependency, 'postgres')
        assert.ok(typeof going[0]!.cause === 'string' && going[0]!.cause !== '', `${which}: the cause is named`)
        assert.ok(summaries.length >= 1 && summaries.length <= 1 + Math.floor(downFor / SUMMARY_EVERY_MS), `${which}: ${summaries.length} summaries in ${downFor} ms`)
        for (const l of summaries) assert.ok(l.level === 40 && l.dependency === 'postgres' && l.failed! > 0, JSON.stringify(l))
        assert.equal(back.length, 1, which)
        assert.equal(back[0]!.level, 30)
        assert.equal(back[0]!.failed, failed[s], `${which}: the back line counts every request the outage failed`)
        assert.equal(1 + summaries.reduce((n, l) => n + l.failed!, 0) <= failed[s]!, true)
        assert.doesNotMatch(server.stdout().slice(marks[s]), /"stack"/, `${which}: no stack`)
        t.diagnostic(`${which}: ${failed[s]} requests failed in a ${downFor} ms outage; ${lines.length} lines besides the access lines (${summaries.length} summaries); cause: ${going[0]!.cause}`)
      }
    } finally {
      running = false
      await load
    }
  })
})
