// requires: postgresql, pgbouncer
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { startPgBouncer } from '../../scripts/pgbouncer.mjs'
import { createTestDatabase, testClusterUrl } from '../helpers/app.js'
import { startServer, waitForOutput, type RunningServer } from '../helpers/process.js'
import { onCleanup } from '../helpers/cleanup.js'

async function metricsUrl (server: RunningServer): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const url = /"url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)","msg":"metrics listening"/.exec(server.stdout())?.[1]
    if (url !== undefined) return url
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new Error(`no metrics listener in the log:\n${server.stdout()}`)
}

async function namedGauge (url: string): Promise<string | undefined> {
  const body = await (await fetch(url)).text()
  return /^petstore_pg_named_statements (\d)$/m.exec(body)?.[1]
}

/** The log lines (JSON) whose msg matches `re`. */
function lines (server: RunningServer, re: RegExp): Array<Record<string, unknown>> {
  return server.stdout().split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as Record<string, unknown>)
    .filter(l => re.test(String(l.msg)))
}

describe('PG_PREPARED_STATEMENTS=auto in the compiled server', () => {
  it('says once, at warn and in /metrics, when a transaction-mode pooler makes it stop naming statements; every request is still answered', async (t) => {
    // One server connection behind the pooler for all of the service's pool: a statement one pool
    // connection prepared is already there when the next one prepares it (42P05).
    const bouncer = await startPgBouncer(testClusterUrl(), { default_pool_size: 1 })
    onCleanup(t, async () => await bouncer.destroy())
    const direct = await createTestDatabase(t)
    const store = await openStore(loadConfig({ DATABASE_URL: direct }))
    const { key } = await createApiKey(store, 'test')
    await store.close()
    const url = new URL(direct)
    url.port = new URL(bouncer.url).port
    const server = await startServer(t, { DATABASE_URL: url.href, METRICS_PORT: '0', LOG_LEVEL: 'info' })
    const metrics = await metricsUrl(server)
    assert.equal(await namedGauge(metrics), '1', 'named before anything showed a pooler')
    assert.deepEqual(lines(server, /named prepared statement/), [])

    const auth = { authorization: `Bearer ${key}` }
    // Read-cache misses on several pool connections at once, then creates: each is answered.
    for (let round = 0; round < 5; round++) {
      const reads = await Promise.all(Array.from({ length: 6 }, async (_, i) => (await fetch(`${server.url}/v1/pets/${round * 10 + i + 1}`, { headers: auth })).status))
      assert.deepEqual(reads, Array(6).fill(404))
      const created = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' })
      assert.equal(created.status, 201)
    }

    assert.equal(await namedGauge(metrics), '0')
    await waitForOutput(server, /named prepared statement/)
    const warned = lines(server, /named prepared statement/)
    assert.equal(warned.length, 1, server.stdout())
    assert.equal(warned[0]!.level, 40)
    assert.equal(warned[0]!.setting, 'PG_PREPARED_STATEMENTS')
    assert.match(String(warned[0]!.sqlstate), /^(42P05|26000)$/)
    assert.match(String(warned[0]!.serverMessage), /^prepared statement "\w+_[0-9a-f]{12}" (already exists|does not exist)$/)
    assert.match(String(warned[0]!.msg), /PG_PREPARED_STATEMENTS=auto sends every statement unnamed from now on.*Set PG_PREPARED_STATEMENTS=off/)
  })

  it('keeps naming statements, and logs nothing about it, on a direct connection', async (t) => {
    const direct = await createTestDatabase(t)
    const store = await openStore(loadConfig({ DATABASE_URL: direct }))
    const { key } = await createApiKey(store, 'test')
    await store.close()
    const server = await startServer(t, { DATABASE_URL: direct, METRICS_PORT: '0', LOG_LEVEL: 'info' })
    const metrics = await metricsUrl(server)
    const auth = { authorization: `Bearer ${key}` }
    for (let round = 0; round < 3; round++) {
      const reads = await Promise.all(Array.from({ length: 6 }, async (_, i) => (await fetch(`${server.url}/v1/pets/${round * 10 + i + 1}`, { headers: auth })).status))
      assert.deepEqual(reads, Array(6).fill(404))
      const created = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' })
      assert.equal(created.status, 201)
    }
    assert.equal(await namedGauge(metrics), '1')
    assert.deepEqual(lines(server, /named prepared statement/), [])
  })

  it('shows 0 with PG_PREPARED_STATEMENTS=off, and logs nothing about it', async (t) => {
    const direct = await createTestDatabase(t)
    const server = await startServer(t, { DATABASE_URL: direct, METRICS_PORT: '0', LOG_LEVEL: 'info', PG_PREPARED_STATEMENTS: 'off' })
    assert.equal(await namedGauge(await metricsUrl(server)), '0')
    assert.deepEqual(lines(server, /named prepared statement/), [])
  })
})
