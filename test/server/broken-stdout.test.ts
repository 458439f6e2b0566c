import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { metricsUrlOf, startServer } from '../helpers/process.js'

// The JSON log goes through an asynchronous destination (src/logging/log-destination.ts); at exit the
// entry waits for it to be written out (src/logging/logger.ts). When the reader of stdout has gone (a
// log shipper that exited, or `npm start | head`), writes fail with EPIPE: that wait must still end,
// so SIGTERM exits 0 instead of hanging until the shutdown timeout forces exit 1.
describe('the server with a stdout whose reader has gone', () => {
  it('still shuts down cleanly on SIGTERM (exit 0), within the shutdown timeout', async (t) => {
    const dir = tempDir(t)
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, SHUTDOWN_TIMEOUT_MS: '20000' })
    server.child.stdout!.destroy() // the reader goes away: the server's next log write gets EPIPE
    for (let i = 0; i < 5; i++) {
      // Each answer writes an access-log line into the broken pipe.
      const res = await fetch(`${server.url}/v1/pets`)
      assert.equal(res.status, 401)
      await res.arrayBuffer()
    }
    server.child.kill('SIGTERM')
    const { code, signal } = await server.exited
    assert.equal(signal, null)
    assert.equal(code, 0, `exit code ${code}; stderr: ${server.stderr()}`)
  })
})

describe('log lines lost to a stdout whose reader has gone', () => {
  it('are counted in /metrics (petstore_log_lines_dropped_total), and the service keeps serving', async (t) => {
    const dir = tempDir(t)
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, METRICS_PORT: '0' })
    const metricsUrl = await metricsUrlOf(server)
    const dropped = async (): Promise<number> => {
      const m = /^petstore_log_lines_dropped_total (\d+)$/m.exec(await (await fetch(metricsUrl)).text())
      assert.ok(m, 'petstore_log_lines_dropped_total is in /metrics')
      return Number(m[1])
    }
    assert.equal(await dropped(), 0)
    server.child.stdout!.destroy()
    const requests = 20
    for (let i = 0; i < requests; i++) {
      const res = await fetch(`${server.url}/v1/pets`)
      assert.equal(res.status, 401)
      await res.arrayBuffer()
    }
    // Each request's access line is lost; they are written in batches a few ms apart, so wait for the last.
    let n = 0
    for (let i = 0; i < 100 && n < requests; i++) {
      n = await dropped()
      if (n < requests) await new Promise(resolve => setTimeout(resolve, 50))
    }
    assert.ok(n >= requests, `${n} lines counted as dropped, ${requests} requests logged into the broken pipe`)
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
  })
})

describe('the server with a stdout nobody reads (a stuck log shipper)', () => {
  it('keeps answering: its log writes to the full pipe never wait', async (t) => {
    const dir = tempDir(t)
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` })
    // The log destination writes to a pipe from the event loop's thread (src/logging/log-destination.ts): only
    // safe because Node has made the pipe non-blocking (O_NONBLOCK, 0o4000, in the kernel's fd flags).
    const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/${server.child.pid}/fdinfo/1`, 'utf8'))
    assert.ok(flags !== null && (parseInt(flags[1]!, 8) & 0o4000) !== 0, `the server's stdout is non-blocking (flags ${flags?.[1]})`)
    server.child.stdout!.pause() // the pipe (64 KiB) fills, then stays full
    // 1,500 access lines of ~200 bytes (/healthz: not rate-limited): several times what the pipe
    // holds. A write that waited for the reader would hang the event loop, and these requests with it.
    for (let i = 0; i < 150; i++) {
      const answers = await Promise.all(Array.from({ length: 10 }, async () => {
        const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(20_000) })
        await res.arrayBuffer()
        return res.status
      }))
      assert.deepEqual(answers, Array(10).fill(200))
    }
    // The reader comes back: every line held meanwhile arrives (EAGAIN retried, nothing dropped).
    server.child.stdout!.resume()
    const count = () => server.stdout().split('\n').filter(line => line.includes('"url":"/healthz"')).length
    for (let i = 0; i < 200 && count() < 1500; i++) await new Promise(resolve => setTimeout(resolve, 50))
    assert.equal(count(), 1500)
  })
})
