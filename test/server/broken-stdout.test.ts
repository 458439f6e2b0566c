import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { startServer } from '../helpers/process.js'

// The JSON log goes through pino's asynchronous destination; at exit the entry waits for it to be
// written out (src/logging.ts). When the reader of stdout has gone (a log shipper that exited, or
// `npm start | head`), writes fail with EPIPE, pino turns the stream's end() into a no-op and the
// stream never closes: that wait must still end, so SIGTERM exits 0 instead of hanging until the
// shutdown timeout forces exit 1.
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
    let metricsUrl: string | undefined
    for (let i = 0; i < 100 && metricsUrl === undefined; i++) {
      metricsUrl = /"url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)","msg":"metrics listening"/.exec(server.stdout())?.[1]
      if (metricsUrl === undefined) await new Promise(resolve => setTimeout(resolve, 50))
    }
    assert.ok(metricsUrl, server.stdout())
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
