import { readdirSync, readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import { makeKey, startServerProcess } from './server-process.js'

/*
 * Soak: the real server process, loopback, keep-alive clients. First a short closed-loop burst finds
 * the peak rate; then an open-loop load at a fraction of it (mixed reads and writes) for the given
 * time, sampling the server's RSS and open file descriptors.
 */
export interface SoakOptions {
  dbPath: string
  seconds: number
  /** Seconds of the peak probe; the soak then runs at `fraction` of it. */
  probeSeconds: number
  fraction: number
  /** Share of requests that are creates (the rest: list pages and gets). */
  writeShare: number
  /** The first minute (or this many seconds) is the warm-up for RSS and fd baselines. */
  windowSeconds: number
  log?: (line: string) => void
}

export interface SoakResult {
  peakRps: number
  targetRps: number
  achievedRps: number
  requests: number
  byStatus: Record<string, number>
  serverErrors: number
  clientErrors: number
  p99FirstMs: number
  p99LastMs: number
  /** p99 of every window, in order. */
  p99ByWindowMs: number[]
  /** p99 of reads alone (lists and gets, which never wait for an fsync), by window. */
  p99ReadsByWindowMs: number[]
  rssStartMiB: number
  rssEndMiB: number
  rssGrowthPct: number
  fdsStart: number
  fdsEnd: number
  fdsMax: number
}

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024
const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length
const p99 = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))] ?? 0 }

export async function runSoak (opts: SoakOptions): Promise<SoakResult> {
  const key = await makeKey(opts.dbPath)
  // One key drives the whole load: the per-key rate limit would turn the soak into a test of 429s.
  const server = await startServerProcess(opts.dbPath, { env: { LOG_LEVEL: 'info', RATE_LIMIT_MAX: '0' } })
  const pid = server.proc.pid!
  // One pool for the peak probe, another for the soak, so the probe's sockets do not count in the fds.
  let agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const byStatus: Record<string, number> = {}
  let clientErrors = 0
  let seq = 0
  let lastId = 0

  const one = (): Promise<{ status: number, ms: number, write: boolean }> => new Promise((resolve) => {
    const started = performance.now()
    const roll = Math.random()
    const write = roll < opts.writeShare
    const path = write ? '/v1/pets' : roll < opts.writeShare + (1 - opts.writeShare) / 2 ? `/v1/pets?limit=${1 + (seq % 100)}` : `/v1/pets/${1 + Math.floor(Math.random() * Math.max(1, lastId))}`
    const req = request({ host: '127.0.0.1', port: server.port, method: write ? 'POST' : 'GET', path, headers, agent }, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (d: string) => { body += d }).on('end', () => {
        if (write && res.statusCode === 201) lastId = Math.max(lastId, Number(/"id":(\d+)/.exec(body)?.[1] ?? 0))
        resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, write })
      })
    })
    req.on('error', () => { clientErrors++; resolve({ status: 0, ms: performance.now() - started, write }) })
    req.end(write ? JSON.stringify({ name: `soak-${seq++}`, categoryId: seq }) : undefined)
  })

  try {
    // Peak: 64 closed-loop clients for probeSeconds.
    let done = 0
    const until = Date.now() + opts.probeSeconds * 1000
    await Promise.all(Array.from({ length: 64 }, async () => { while (Date.now() < until) { await one(); done++ } }))
    const peakRps = done / opts.probeSeconds
    agent.destroy()
    agent = new Agent({ keepAlive: true, maxSockets: 64 })
    const targetRps = peakRps * opts.fraction
    opts.log?.(`peak ≈ ${peakRps.toFixed(0)} req/s; soaking at ${targetRps.toFixed(0)} req/s for ${opts.seconds}s`)

    // Soak: open loop, dispatching every 10 ms.
    const windows = new Map<number, number[]>()
    const readWindows = new Map<number, number[]>()
    const start = Date.now()
    let sent = 0
    let requests = 0
    const inFlight = new Set<Promise<unknown>>()
    const samples: Array<{ t: number, rss: number, fds: number }> = []
    let nextSample = 0
    while (Date.now() - start < opts.seconds * 1000) {
      const elapsed = (Date.now() - start) / 1000
      const due = Math.floor(elapsed * targetRps) - sent
      for (let i = 0; i < due && inFlight.size < 512; i++, sent++) {
        const w = Math.floor(elapsed / opts.windowSeconds)
        const p = one().then(({ status, ms, write }) => {
          requests++
          byStatus[status] = (byStatus[status] ?? 0) + 1
          const list = windows.get(w) ?? []
          list.push(ms)
          windows.set(w, list)
          if (!write) {
            const reads = readWindows.get(w) ?? []
            reads.push(ms)
            readWindows.set(w, reads)
          }
          inFlight.delete(p)
        })
        inFlight.add(p)
      }
      if (elapsed >= nextSample) {
        samples.push({ t: elapsed, rss: rssMiB(pid), fds: fds(pid) })
        nextSample += 5
      }
      await sleep(10)
    }
    await Promise.all(inFlight)
    samples.push({ t: opts.seconds, rss: rssMiB(pid), fds: fds(pid) })
    const lastWindow = Math.max(...windows.keys())
    // Baselines after the first window (warm-up: JIT, caches, pools).
    const base = samples.find(s => s.t >= opts.windowSeconds) ?? samples[0]!
    const end = samples.at(-1)!
    const serverErrors = Object.entries(byStatus).filter(([s]) => Number(s) >= 500).reduce((n, [, c]) => n + c, 0)
    return {
      peakRps,
      targetRps,
      achievedRps: requests / opts.seconds,
      requests,
      byStatus,
      serverErrors,
      clientErrors,
      p99FirstMs: p99(windows.get(0) ?? []),
      p99LastMs: p99(windows.get(lastWindow) ?? []),
      p99ByWindowMs: [...windows.keys()].sort((a, b) => a - b).map(w => p99(windows.get(w)!)),
      p99ReadsByWindowMs: [...windows.keys()].sort((a, b) => a - b).map(w => p99(readWindows.get(w) ?? [])),
      rssStartMiB: base.rss,
      rssEndMiB: end.rss,
      rssGrowthPct: (end.rss - base.rss) / base.rss * 100,
      fdsStart: base.fds,
      fdsEnd: end.fds,
      fdsMax: Math.max(...samples.filter(x => x.t >= base.t).map(x => x.fds))
    }
  } finally {
    agent.destroy()
    server.proc.kill('SIGTERM')
    await server.exited
  }
}

export function formatSoak (r: SoakResult, seconds: number): string {
  return `soak ${seconds}s: peak ${r.peakRps.toFixed(0)} req/s, target ${r.targetRps.toFixed(0)}, achieved ${r.achievedRps.toFixed(0)} req/s; ` +
    `${r.requests} requests ${JSON.stringify(r.byStatus)}, 5xx ${r.serverErrors}, client errors ${r.clientErrors}; ` +
    `p99 first window ${r.p99FirstMs.toFixed(1)} ms, last ${r.p99LastMs.toFixed(1)} ms (by window: ${r.p99ByWindowMs.map(x => x.toFixed(0)).join(', ')}; reads only: ${r.p99ReadsByWindowMs.map(x => x.toFixed(0)).join(', ')}); ` +
    `RSS ${r.rssStartMiB.toFixed(1)} → ${r.rssEndMiB.toFixed(1)} MiB (${r.rssGrowthPct >= 0 ? '+' : ''}${r.rssGrowthPct.toFixed(1)}%); fds ${r.fdsStart} → ${r.fdsEnd} (max ${r.fdsMax})`
}
