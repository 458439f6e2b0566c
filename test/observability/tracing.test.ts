// requires: redis-server
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { PG_ROUTES, type StoreKind, testDatabaseUrl } from '../helpers/app.js'
import { type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp-receiver.js'
import { ROOT, SERVER_PATH, childEnv, startServer, waitForOutput } from '../helpers/process.js'
import { startRedis } from '../helpers/redis.js'
import { freePort } from '../helpers/server.js'

const SERVER = 2
const CLIENT = 3
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT_ID = '00f067aa0ba902b7'

async function keyFor (databaseUrl: string): Promise<string> {
  const store = await openStore(loadConfig({ DATABASE_URL: databaseUrl }))
  try {
    return (await createApiKey(store, 'tracing')).key
  } finally {
    await store.close()
  }
}

const byId = (spans: ReceivedSpan[], id: string) => spans.find(s => s.spanId === id)
const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) => spans.filter(s => s.parentSpanId === parent.spanId && s.traceId === parent.traceId)

/**
 * A run per store (PostgreSQL directly and through PgBouncer when present), the two encodings
 * spread over them, one with the rate limits in Redis, one with pretty logs.
 */
const RUNS: Array<{ store: StoreKind, protocol: 'http/json' | 'http/protobuf', redis?: true, pretty?: true }> = [
  { store: 'sqlite', protocol: 'http/json', redis: true },
  { store: 'sqlite', protocol: 'http/protobuf', pretty: true },
  ...PG_ROUTES.map((store, i) => ({ store, protocol: i % 2 === 0 ? 'http/json' as const : 'http/protobuf' as const }))
]

describe('OpenTelemetry tracing of the compiled server', () => {
  for (const { store, protocol, redis, pretty } of RUNS) {
    it(`${store}${redis === true ? ' and Redis' : ''}, ${protocol}${pretty === true ? ', pretty logs' : ''}: continues the caller's trace with a server span per request, store children, and the ids in the access line`, async (t) => {
      const receiver = await startOtlpReceiver(t)
      const databaseUrl = await testDatabaseUrl(t, store)
      const key = await keyFor(databaseUrl)
      const server = await startServer(t, {
        DATABASE_URL: databaseUrl,
        ...(redis === true ? { REDIS_URL: await startRedis(t) } : {}),
        ...(pretty === true ? { LOG_FORMAT: 'pretty', NO_COLOR: '1' } : { LOG_FORMAT: 'json' }),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-tenant=shop',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
        OTEL_BSP_SCHEDULE_DELAY: '100'
      })
      const auth = { authorization: `Bearer ${key}` }
      const traceparent = `00-${TRACE_ID}-${PARENT_ID}-01`

      const created = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'order-77' }, body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }) })
      assert.equal(created.status, 201)
      const { id } = await created.json() as { id: number }
      const read = await fetch(`${server.url}/v1/pets/${id}?api_token=query-secret-value&status=sold`, { headers: { ...auth, traceparent, tracestate: 'vendor=abc' } })
      assert.equal(read.status, 200)
      // Read again: now a cached read, answered from the read cache, with its own server span.
      const cachedTrace = 'a'.repeat(32)
      assert.equal((await fetch(`${server.url}/v1/pets/${id}`, { headers: { ...auth, traceparent: `00-${cachedTrace}-${PARENT_ID}-01` } })).status, 200)
      const missing = await fetch(`${server.url}/v1/pets/999999`, { headers: auth })
      assert.equal(missing.status, 404)
      assert.equal((await fetch(`${server.url}/v1/store/orders`, { headers: auth })).status, 501)

      await receiver.waitFor(spans => ['POST /v1/pets', 'GET /v1/pets/:petId', 'GET /v1/store/orders'].every(n => spans.some(s => s.name === n && s.kind === SERVER)) &&
        spans.filter(s => s.name === 'GET /v1/pets/:petId').length >= 3)
      const spans = receiver.spans

      // The read: a server span in the caller's trace, child of the caller's span.
      const getPet = spans.find(s => s.name === 'GET /v1/pets/:petId' && s.traceId === TRACE_ID)
      assert.ok(getPet !== undefined, `no getPet span in the incoming trace: ${JSON.stringify(spans.map(s => [s.name, s.traceId]))}`)
      assert.equal(getPet.kind, SERVER)
      assert.equal(getPet.parentSpanId, PARENT_ID)
      assert.equal(getPet.attributes['http.route'], '/v1/pets/:petId')
      assert.equal(getPet.attributes['http.request.method'], 'GET')
      assert.equal(getPet.attributes['http.response.status_code'], 200)
      assert.equal(getPet.attributes['url.path'], `/v1/pets/${id}`)
      assert.equal(getPet.attributes['petstore.api_key.id'], 1)
      assert.equal(getPet.resource['service.name'], 'petstore')
      assert.equal(getPet.resource['deployment.environment.name'], 'test')
      // Its store child: the read (a cold cache), a database client span with db.system.
      const dbSystem = (s: ReceivedSpan) => s.attributes['db.system'] ?? s.attributes['db.system.name']
      const reads = childrenOf(spans, getPet).filter(s => s.kind === CLIENT && dbSystem(s) !== 'redis')
      assert.ok(reads.length >= 1, `no store span under getPet: ${JSON.stringify(spans.map(s => [s.name, s.parentSpanId]))}`)
      for (const r of reads) assert.equal(dbSystem(r), store === 'sqlite' ? 'sqlite' : 'postgresql')

      const cached = spans.find(s => s.traceId === cachedTrace && s.kind === SERVER)
      assert.equal(cached?.name, 'GET /v1/pets/:petId', 'the cached read has its server span')
      assert.equal(cached.attributes['http.response.status_code'], 200)
      // A read answered from the read cache reads no pet from the store (the key may be looked up again).
      const readsPets = (s: ReceivedSpan) => dbSystem(s) !== 'redis' && (s.name.includes('pets') || String(s.attributes['db.statement'] ?? s.attributes['db.query.text'] ?? '').includes('pets'))
      assert.ok(reads.some(readsPets), 'the cold read reads the pet from the store')
      assert.deepEqual(childrenOf(spans, cached).filter(readsPets).map(s => s.name), [], 'a read answered from the cache has no store span for it')

      // The create: server span → idempotency check (its outcome) → the store's insert.
      const createPet = spans.find(s => s.name === 'POST /v1/pets')!
      assert.notEqual(createPet.traceId, TRACE_ID, 'a request without traceparent starts a trace of its own')
      assert.equal(createPet.attributes['http.response.status_code'], 201)
      const idem = childrenOf(spans, createPet).find(s => s.name === 'idempotency check')
      assert.ok(idem !== undefined, 'no idempotency check span under the create')
      assert.equal(idem.attributes['petstore.idempotency.outcome'], 'created')
      const insert = spans.filter(s => s.kind === CLIENT && s.traceId === createPet.traceId && byId(spans, s.parentSpanId) === idem)
      assert.ok(insert.length >= 1, 'no store span under the idempotency check')

      // The rate-limit count in Redis: a client span of the request.
      if (redis === true) {
        const counts = spans.filter(s => dbSystem(s) === 'redis')
        assert.ok(counts.some(c => byId(spans, c.parentSpanId)?.kind === SERVER), `no Redis span under a request: ${JSON.stringify(spans.map(s => s.name))}`)
      }

      // The 404: error.type is the Error code.
      const notFound = spans.find(s => s.name === 'GET /v1/pets/:petId' && s.attributes['http.response.status_code'] === 404)
      assert.equal(notFound?.attributes['error.type'], 'not_found')
      assert.equal(notFound.status.code, 0, 'a 4xx is the client\'s error, not the server span\'s')
      // The 501: an error span, with the exception the route threw.
      const orders = spans.find(s => s.name === 'GET /v1/store/orders')!
      assert.equal(orders.attributes['http.response.status_code'], 501)
      assert.equal(orders.attributes['error.type'], 'not_implemented')
      assert.equal(orders.status.code, 2)
      assert.match(orders.status.message ?? '', /not implemented/)
      assert.ok(orders.events.some(e => e.name === 'exception'), JSON.stringify(orders.events))

      // Exported as asked: the encoding, the headers; nothing secret anywhere in what was sent.
      const exports = receiver.requests.filter(r => r.path === '/v1/traces')
      assert.ok(exports.length > 0)
      for (const r of exports) {
        assert.equal(r.contentType.split(';')[0], protocol === 'http/json' ? 'application/json' : 'application/x-protobuf')
        assert.equal(r.headers['x-collector-tenant'], 'shop')
        const raw = r.body.toString('latin1')
        for (const secret of [key, key.slice(4), 'query-secret-value', 'Bearer', 'Rex']) assert.ok(!raw.includes(secret), `${secret} was exported`)
      }
      assert.deepEqual(receiver.requests.filter(r => r.path !== '/v1/traces').map(r => r.path), [], 'only traces are exported')

      // The access line of the read names its trace and server span; the X-Request-Id stays.
      if (pretty === true) {
        await waitForOutput(server, new RegExp(`trace_id: "${TRACE_ID}"\\n\\s+span_id: "${getPet.spanId}"`))
        return
      }
      await waitForOutput(server, new RegExp(`"trace_id":"${TRACE_ID}"`))
      const line = server.stdout().split('\n').map(l => l.startsWith('{') ? JSON.parse(l) as Record<string, unknown> : {}).find(l => l.msg === 'request completed' && l.trace_id === TRACE_ID)
      assert.ok(line !== undefined)
      assert.equal(line.span_id, getPet.spanId)
      assert.equal(line.trace_flags, '01')
      assert.equal(line.reqId, read.headers.get('x-request-id'))
      assert.deepEqual(Object.keys(line).slice(0, 8), ['level', 'time', 'pid', 'hostname', 'reqId', 'trace_id', 'span_id', 'trace_flags'], 'the request id leads, the trace fields follow')
    })
  }

  it('is off without the OTEL variables that turn it on: no SDK module is loaded, nothing is sent', async (t) => {
    const receiver = await startOtlpReceiver(t)
    const databaseUrl = await testDatabaseUrl(t, 'sqlite')
    const key = await keyFor(databaseUrl)
    // Standard variables that do not turn tracing on by themselves, and an endpoint switched off.
    const off = await modulesAfterRequests({ DATABASE_URL: databaseUrl, KEY: key, OTEL_SERVICE_NAME: 'petstore-off', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
    // prom-client (the metrics) imports @opentelemetry/api itself, for exemplars: the API alone is a
    // facade that does nothing without an SDK.
    assert.deepEqual(off.filter(p => !p.includes('@opentelemetry/api/')), [])
    await new Promise(resolve => setTimeout(resolve, 500))
    assert.deepEqual(receiver.requests, [])
    // The same run with tracing on: the check sees the SDK, and the receiver its spans.
    const on = await modulesAfterRequests({ DATABASE_URL: databaseUrl, KEY: key, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
    assert.ok(on.some(p => p.includes('@opentelemetry/sdk-trace-node')), JSON.stringify(on))
    // Only the exporter of the configured encoding is loaded.
    assert.ok(on.some(p => p.includes('@opentelemetry/exporter-trace-otlp-http/')), JSON.stringify(on))
    assert.ok(!on.some(p => p.includes('@opentelemetry/exporter-trace-otlp-proto/')), JSON.stringify(on))
    assert.ok(receiver.requests.length > 0)
  })
})

/**
 * Runs the compiled service in a process of its own (with `env`), sends it a create, a read and a
 * list, stops it (SIGINT: the spans are flushed), and answers which modules of OpenTelemetry it loaded.
 */
async function modulesAfterRequests (env: Record<string, string>): Promise<string[]> {
  const script = `
    import { createRequire } from 'node:module'
    const { startServer } = await import(${JSON.stringify(SERVER_PATH)})
    await startServer(process.env)
    const base = 'http://127.0.0.1:' + process.env.PORT
    const auth = { authorization: 'Bearer ' + process.env.KEY }
    const created = await fetch(base + '/v1/pets', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }) })
    await fetch(base + '/v1/pets/' + (await created.json()).id, { headers: auth })
    await fetch(base + '/v1/pets', { headers: auth })
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter(p => p.includes('opentelemetry'))
    process.stderr.write('LOADED ' + JSON.stringify(loaded) + '\\n')
    process.kill(process.pid, 'SIGINT')
  `
  const port = String(await freePort())
  const { stderr } = await new Promise<{ stderr: string }>((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      timeout: 30_000,
      env: childEnv({ PORT: port, HOST: '127.0.0.1', LOG_LEVEL: 'warn', EVENT_LOOP_MAX_DELAY_MS: '0', SHUTDOWN_DRAIN_MS: '0', ...env })
    }, (_err, _stdout, stderr) => resolve({ stderr }))
  })
  const m = /^LOADED (.*)$/m.exec(stderr)
  assert.ok(m !== null, stderr)
  return JSON.parse(m[1]!) as string[]
}
