import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { metricsUrlOf, startServer } from '../helpers/process.js'

describe('the /metrics listener of the compiled server', () => {
  it('serves Prometheus metrics on METRICS_PORT only, not on the API port', async (t) => {
    const dir = tempDir(t)
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, METRICS_PORT: '0' })
    const metricsUrl = await metricsUrlOf(server)
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
    const res = await fetch(metricsUrl)
    assert.equal(res.status, 200)
    const body = await res.text()
    assert.match(body, /petstore_http_requests_total\{method="GET",route="\/healthz",status="200"\} 1/)
    assert.match(body, /petstore_process_cpu_seconds_total/)
    assert.equal((await fetch(`${server.url}/metrics`)).status, 404)
  })
})
