import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { checkResponse } from '../helpers/conformance.js'
import { makeKey, SERVER_JS } from '../helpers/server-process.js'
import { startServer, waitForOutput, type RunningServer } from '../helpers/process.js'

/**
 * Ends the server's SQLite writer thread from outside, as a crash of that thread would: through the
 * process's own inspector (node --inspect), whose NodeWorker domain reaches worker threads; the
 * thread runs `process.exit(3)`, which in a worker ends that thread only. Nothing in the service is
 * there for the test.
 */
async function stopWriterThread (server: RunningServer): Promise<void> {
  const wsUrl = /Debugger listening on (ws:\/\/\S+)/.exec(server.stderr())?.[1]
  assert.ok(wsUrl, server.stderr())
  const ws = new WebSocket(wsUrl)
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject })
  try {
    let nextId = 1
    const send = (method: string, params: Record<string, unknown> = {}): void => { ws.send(JSON.stringify({ id: nextId++, method, params })) }
    const attached = new Promise<string>((resolve) => {
      ws.onmessage = (ev: MessageEvent) => {
        const msg = JSON.parse(String(ev.data)) as { method?: string, params?: { sessionId: string, workerInfo: { url: string } } }
        if (msg.method === 'NodeWorker.attachedToWorker' && /writer-worker/.test(msg.params!.workerInfo.url)) resolve(msg.params!.sessionId)
      }
    })
    send('NodeWorker.enable', { waitForDebuggerOnStart: false })
    const sessionId = await attached
    send('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression: 'process.exit(3)' } }) })
  } finally {
    // The thread is told; whether it has ended yet is what the caller waits for.
    setTimeout(() => ws.close(), 100)
  }
}

async function get (server: RunningServer, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}${path}`, { headers })
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() }
}

describe('a stopped SQLite writer thread, in the compiled server', () => {
  it('takes the instance out of rotation: /readyz answers 503 (the documented Error), creates 503, while liveness and reads go on', async (t) => {
    const dir = tempDir(t)
    const db = join(dir, 'petstore.db')
    const auth = { authorization: `Bearer ${await makeKey(db)}` }
    const server = await startServer(t, { DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'info' }, ['--inspect=127.0.0.1:0', SERVER_JS])
    const post = async () => await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' })
    assert.equal((await get(server, '/readyz')).status, 200)
    const before = await post()
    assert.equal(before.status, 201)

    await stopWriterThread(server)
    // The thread's exit reaches the store as an event: wait for it, however slow the machine (a
    // minute is a bound for a hung test, not an expectation).
    let ready = await get(server, '/readyz')
    for (const deadline = Date.now() + 60_000; ready.status === 200 && Date.now() < deadline;) {
      await new Promise(resolve => setTimeout(resolve, 25))
      ready = await get(server, '/readyz')
    }
    assert.equal(ready.status, 503, ready.body)
    assert.deepEqual(JSON.parse(ready.body), { code: 'service_unavailable', message: 'the store does not answer', status: 503 })
    assert.equal(ready.headers['retry-after'], '1')
    checkResponse({ method: 'GET', url: '/readyz', status: ready.status, headers: ready.headers, body: ready.body })
    await waitForOutput(server, /"msg":"the SQLite database \(DATABASE_URL\) is unavailable/)
    assert.match(server.stdout(), /SQLite writer thread exited with code 3/)

    // No write is taken, and none hangs; the process lives on and serves what it still can.
    const after = await post()
    assert.equal(after.status, 503)
    assert.equal(((await after.json()) as { code: string }).code, 'service_unavailable')
    assert.equal((await get(server, '/healthz')).status, 200)
    const list = await get(server, '/v1/pets', auth)
    assert.equal(list.status, 200)
    assert.equal((JSON.parse(list.body) as unknown[]).length, 1)
    assert.equal(server.child.exitCode, null)
  })
})
