import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { Agent, request as httpRequest } from 'node:http'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { tempDir } from '../helpers/app.js'
import { watchExit } from '../helpers/exit-watch.js'
import { onCleanup } from '../helpers/cleanup.js'

interface Answer { status: number, body: string }

function call (agent: Agent, port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let data = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { data += c })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('graceful shutdown of the compiled server', () => {
  it('on SIGTERM under load: closes idle sockets, finishes in-flight requests, loses no acknowledged write, exits 0', async (t) => {
    const dir = tempDir(t)
    const dbUrl = `sqlite:${join(dir, 'petstore.db')}`
    const setup = await openStore(loadConfig({ DATABASE_URL: dbUrl }, dir))
    const { key } = await createApiKey(setup, 'load')
    await setup.close()

    const child = spawn(process.execPath, ['dist/server.js'], {
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: dbUrl,
        PORT: '0',
        METRICS_PORT: 'off',
        LOG_LEVEL: 'info',
        RATE_LIMIT_MAX: '0',
        EVENT_LOOP_MAX_DELAY_MS: '0',
        // Stops accepting at once; the drain before it has its own test (drain.test.ts).
        SHUTDOWN_DRAIN_MS: '0',
        // Timeouts far beyond the test's own: only a deliberate close can end the sockets in time.
        KEEP_ALIVE_TIMEOUT_MS: '600000',
        REQUEST_TIMEOUT_MS: '600000',
        HEADERS_TIMEOUT_MS: '600000',
        SHUTDOWN_TIMEOUT_MS: '600000'
      },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    watchExit(child, 'dist/server.js')
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const exited = new Promise<number | null>(resolve => child.once('exit', (code) => resolve(code)))
    onCleanup(t, () => { if (child.exitCode === null) child.kill('SIGKILL') })

    const logs: Array<Record<string, unknown>> = []
    const waiters: Array<{ test: (l: Record<string, unknown>) => boolean, resolve: (l: Record<string, unknown>) => void }> = []
    createInterface({ input: child.stdout }).on('line', (line) => {
      let entry: Record<string, unknown>
      try { entry = JSON.parse(line) } catch { return }
      logs.push(entry)
      for (const w of waiters.splice(0)) if (w.test(entry)) w.resolve(entry); else waiters.push(w)
    })
    const logged = (test: (l: Record<string, unknown>) => boolean) => new Promise<Record<string, unknown>>(resolve => {
      const hit = logs.find(test)
      if (hit !== undefined) resolve(hit); else waiters.push({ test, resolve })
    })

    const listening = await Promise.race([
      logged(l => typeof l.msg === 'string' && l.msg.startsWith('Server listening at http://127.0.0.1:')),
      exited.then(code => { throw new Error(`server exited with ${code}: ${stderr}`) })
    ])
    const port = Number(/:(\d+)$/.exec(String(listening.msg))![1])
    // A SQLite file is checked while the server already listens: /v1 is served from this line on.
    await logged(l => l.msg === 'serving /v1: the store is open')
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }

    // An idle keep-alive connection: must be closed at once on shutdown, not after KEEP_ALIVE_TIMEOUT_MS.
    const idleAgent = new Agent({ keepAlive: true, maxSockets: 1 })
    onCleanup(t, () => idleAgent.destroy())
    assert.equal((await call(idleAgent, port, 'GET', '/healthz', {})).status, 200)
    const idleSocket = Object.values(idleAgent.freeSockets).flat()[0] as Socket
    const idleClosed = new Promise<void>(resolve => idleSocket.once('close', () => resolve()))

    // A request in flight across the signal: headers and half the body now, the rest after SIGTERM.
    const slowBody = JSON.stringify({ name: 'in-flight', categoryId: 42 })
    const slow = connect(port, '127.0.0.1')
    onCleanup(t, () => slow.destroy())
    let slowAnswer = ''
    slow.setEncoding('utf8')
    slow.on('data', (d: string) => { slowAnswer += d })
    const slowEnded = new Promise<void>(resolve => slow.once('close', () => resolve()))
    await new Promise<void>(resolve => slow.once('connect', () => resolve()))
    slow.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(slowBody)}\r\n\r\n${slowBody.slice(0, 10)}`)

    // Load: keep-alive clients creating pets until the server stops answering them.
    const acknowledged: Array<{ id: string, name: string }> = []
    const outcomes = new Map<string, number>()
    let stop = false
    const loadAgent = new Agent({ keepAlive: true, maxSockets: 8 })
    onCleanup(t, () => loadAgent.destroy())
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const name = `w${w}-${i}`
        try {
          const res = await call(loadAgent, port, 'POST', '/v1/pets', auth, JSON.stringify({ name, categoryId: i }))
          outcomes.set(String(res.status), (outcomes.get(String(res.status)) ?? 0) + 1)
          if (res.status === 201) {
            acknowledged.push({ id: /"id":(\d+)/.exec(res.body)![1]!, name })
          } else {
            assert.equal(res.status, 503, res.body)
            assert.equal(JSON.parse(res.body).code, 'service_unavailable')
          }
        } catch (err) {
          // Refused or reset connections happen once the server stopped listening: never acknowledged.
          const code = (err as { code?: string }).code ?? 'error'
          outcomes.set(code, (outcomes.get(code) ?? 0) + 1)
          if (code === 'ECONNREFUSED') return
        }
      }
    }
    const workers = Array.from({ length: 8 }, (_, w) => worker(w))
    while (acknowledged.length < 200) await new Promise(resolve => setTimeout(resolve, 20))

    child.kill('SIGTERM')
    await logged(l => l.msg === 'shutting down: finishing in-flight requests')
    slow.write(slowBody.slice(10))
    await slowEnded
    await idleClosed
    const code = await exited
    stop = true
    await Promise.all(workers)

    assert.equal(code, 0, `exit code; stderr: ${stderr}`)
    assert.match(slowAnswer, /^HTTP\/1\.1 201 /, 'the in-flight request was answered')
    assert.match(slowAnswer, /[Cc]onnection: close/)
    const slowId = /"id":(\d+)/.exec(slowAnswer)![1]!
    assert.ok(logs.some(l => l.msg === 'shut down cleanly'))
    // No log line is lost at exit (they are written asynchronously, and flushed on the way out): one
    // access line for every answer a client received (the health check, the in-flight create, the
    // load), and the last line is the last thing the process said.
    const answered = 2 + [...outcomes].filter(([k]) => /^\d+$/.test(k)).reduce((n, [, v]) => n + v, 0)
    await new Promise(resolve => setImmediate(resolve)) // lines already read from the pipe are parsed
    const accessLines = logs.filter(l => l.msg === 'request completed').length
    assert.ok(accessLines >= answered, `${accessLines} access lines for ${answered} answers`)
    assert.equal(logs.at(-1)?.msg, 'shut down cleanly')

    // Every acknowledged pet is in the database after the process is gone.
    const store = await openStore(loadConfig({ DATABASE_URL: dbUrl }, dir))
    onCleanup(t, () => store.close())
    for (const { id, name } of [...acknowledged, { id: slowId, name: 'in-flight' }]) {
      const pet = await store.getPet(BigInt(id))
      assert.equal(pet?.name, name, `acknowledged pet ${id} lost`)
    }
    // And nothing was committed without its client hearing of it: a request whose pet exists but whose
    // client got a reset instead of the 201 would be an in-flight request cut by the shutdown.
    const stored = (await store.listPets({ afterId: null, limit: 100000, status: undefined })).map(p => p.name).sort()
    assert.deepEqual(stored, [...acknowledged.map(a => a.name), 'in-flight'].sort())
    t.diagnostic(`acknowledged ${acknowledged.length} creates; outcomes ${JSON.stringify(Object.fromEntries(outcomes))}`)
  })
})
