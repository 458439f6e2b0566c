import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { openStore } from '../../src/store/index.js'
import { tempDir } from '../helpers/app.js'
import { runCli, startServer } from '../helpers/process.js'
import { httpRequest } from '../helpers/server-process.js'
import { onCleanup } from '../helpers/cleanup.js'

/** Long enough for this test's handful of requests on a loaded machine; the process exits after it. */
const DELAY_MS = 8000

describe('rolling restart: SIGTERM drains first (compiled server)', () => {
  it('answers /readyz 503 but keeps serving /v1 during SHUTDOWN_DRAIN_MS, then finishes in-flight requests and exits 0', async (t) => {
    const dir = tempDir(t)
    const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: String(DELAY_MS), SHUTDOWN_TIMEOUT_MS: '60000' }
    const made0 = await runCli(['keys', 'create', '--create', '--name', 'drain'], env)
    assert.equal(made0.code, 0, made0.stderr)
    const key = made0.stdout.trim()
    const server = await startServer(t, env)
    const port = Number(new URL(server.url).port)
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const logged = async (msg: string): Promise<void> => {
      while (!server.stdout().includes(`"msg":"${msg}`)) {
        if (server.child.exitCode !== null) throw new Error(`exited before logging ${msg}: ${server.stdout()}`)
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    }
    assert.equal((await httpRequest(port, 'GET', '/readyz', {})).status, 200)

    // A create in flight across the whole shutdown: headers and part of the body now, the rest once
    // the server has stopped accepting connections.
    const body = JSON.stringify({ name: 'in flight', categoryId: 7 })
    const slow = connect(port, '127.0.0.1')
    onCleanup(t, () => slow.destroy())
    let slowAnswer = ''
    slow.setEncoding('utf8').on('data', (d: string) => { slowAnswer += d })
    const slowClosed = new Promise<void>(resolve => slow.once('close', () => resolve()))
    await new Promise<void>(resolve => slow.once('connect', () => resolve()))
    slow.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`)

    server.child.kill('SIGTERM')
    await logged('shutting down: draining')

    // Draining: out of rotation for the balancer, still serving everything it is sent.
    const ready = await httpRequest(port, 'GET', '/readyz', {})
    assert.equal(ready.status, 503)
    assert.equal(JSON.parse(ready.body).code, 'service_unavailable')
    assert.equal(ready.headers['retry-after'], '1')
    assert.equal((await httpRequest(port, 'GET', '/healthz', {})).status, 200, 'liveness stays up: the orchestrator must not restart a draining instance')
    const made = await httpRequest(port, 'POST', '/v1/pets', { ...auth, connection: 'keep-alive' }, JSON.stringify({ name: 'during drain', categoryId: 8 }))
    assert.equal(made.status, 201, made.body)
    assert.equal(made.headers.connection, 'close', 'a draining instance sends clients to reconnect (through the balancer) after each answer')
    const listed = await httpRequest(port, 'GET', '/v1/pets', auth)
    assert.equal(listed.status, 200)
    assert.ok(!server.stdout().includes('"msg":"shutting down: finishing in-flight requests"'), `the drain ended before the checks above (machine too slow for ${DELAY_MS} ms?)`)

    // Then it stops accepting and finishes what is in flight.
    await logged('shutting down: finishing in-flight requests')
    slow.write(body.slice(10))
    await slowClosed
    assert.match(slowAnswer, /^HTTP\/1\.1 201 /, slowAnswer)
    const { code } = await server.exited
    assert.equal(code, 0, server.stderr())
    assert.ok(server.stdout().includes('"msg":"shut down cleanly"'))

    const store = await openStore(loadConfig({ DATABASE_URL: env.DATABASE_URL }, dir))
    onCleanup(t, () => store.close())
    const names = (await store.listPets({ afterId: null, limit: 100, status: undefined })).map(p => p.name).sort()
    assert.deepEqual(names, ['during drain', 'in flight'])
  })

  it('does not drain with SHUTDOWN_DRAIN_MS=0, nor on SIGINT (a person at a terminal)', async (t) => {
    for (const [signal, delay] of [['SIGTERM', '0'], ['SIGINT', '600000']] as const) {
      const dir = tempDir(t)
      const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: delay })
      server.child.kill(signal)
      // With a drain of 600 s this would not end within the test's time.
      const { code } = await server.exited
      assert.equal(code, 0, server.stderr())
      assert.ok(server.stdout().includes('"msg":"shutting down: finishing in-flight requests"'))
      assert.ok(!server.stdout().includes('"msg":"shutting down: draining'), `${signal} with SHUTDOWN_DRAIN_MS=${delay} drained`)
    }
  })
})
