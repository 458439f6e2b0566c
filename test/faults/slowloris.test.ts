import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { httpRequest, makeKey, startServerProcess } from '../helpers/server-process.js'
import { onCleanup } from '../helpers/cleanup.js'

const SOCKETS = Number(process.env.SLOWLORIS_SOCKETS ?? 2000)

function open (port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1')
    s.once('connect', () => resolve(s))
    s.once('error', reject)
  })
}

describe('idle and slow connections (slowloris) do not stop service for others', () => {
  it(`${SOCKETS} idle or trickling sockets held open while other clients create and list`, async (t) => {
    const dir = tempDir(t)
    const db = join(dir, 'slow.db')
    const key = await makeKey(db)
    const server = await startServerProcess(db)
    const sockets: Socket[] = []
    let trickle: NodeJS.Timeout | undefined
    onCleanup(t, async () => {
      clearInterval(trickle)
      for (const s of sockets) s.destroy()
      server.proc.kill('SIGKILL')
      await server.exited
    })

    for (let i = 0; i < SOCKETS; i += 100) {
      const batch = await Promise.all(Array.from({ length: Math.min(100, SOCKETS - i) }, () => open(server.port)))
      for (const s of batch) s.on('error', () => {})
      sockets.push(...batch)
    }
    // Half stay silent; half start a request and send one more header byte every second, never finishing.
    const slow = sockets.filter((_, i) => i % 2 === 1)
    for (const s of slow) s.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Slow: `)
    trickle = setInterval(() => { for (const s of slow) if (!s.destroyed) s.write('a') }, 1000)

    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const latencies: number[] = []
    for (let i = 0; i < 100; i++) {
      const started = performance.now()
      const res = i % 2 === 0
        ? await httpRequest(server.port, 'POST', '/v1/pets', auth, JSON.stringify({ name: `ok-${i}`, categoryId: i }))
        : await httpRequest(server.port, 'GET', '/v1/pets?limit=5', auth)
      assert.equal(res.status, i % 2 === 0 ? 201 : 200, res.body)
      latencies.push(performance.now() - started)
    }
    const stillOpen = sockets.filter(s => !s.destroyed).length
    latencies.sort((a, b) => a - b)
    t.diagnostic(`${SOCKETS} sockets (${stillOpen} still open at the end); 100 of 100 other requests served; latency p50 ${latencies[49]!.toFixed(1)} ms, max ${latencies[99]!.toFixed(1)} ms`)
  })
})
