// Interleaved A/B of one in-memory rate-limit count, in one process, with no HTTP around it:
// `node bench/ab-rate-store.mjs [rounds=15] [ops=200000] [keys=1]` (after `npm run build`).
// Sides: the service's MemoryWindows.hit (dist/http/rate-windows.js, synchronous, as the plugin calls
// it); @fastify/rate-limit's LocalStore.incr alone (the store without the library around it); and the
// library as an application uses it, `await app.createRateLimit({ max, timeWindow, keyGenerator })(req)`
// (its own LocalStore). Each round runs every side once, in a rotating order, for `ops` counts spread
// over `keys` keys (a window of 60 s, a limit never reached); the first two rounds warm up and are
// dropped. Prints the median ns per count of each side and the median of the per-round ratios.
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import Fastify from 'fastify'
import fastifyRateLimit from '@fastify/rate-limit'
import { requireBuild } from './lib.mjs'

requireBuild()
const { MemoryWindows } = await import('../dist/http/rate-windows.js')
// Not part of the library's public surface: loaded here only to tell the store's cost from the rest.
const LocalStore = createRequire(import.meta.url)('@fastify/rate-limit/store/LocalStore.js')

const rounds = Number(process.argv[2] ?? 15)
const ops = Number(process.argv[3] ?? 200000)
const keyCount = Number(process.argv[4] ?? 1)
const windowMs = 60000
const max = 1e9
const keys = Array.from({ length: keyCount }, (_, i) => `key:${i + 1}`)

const windows = new MemoryWindows(windowMs)
const store = new LocalStore(false, false, 10000)
const app = Fastify()
await app.register(fastifyRateLimit, { global: false, timeWindow: windowMs, cache: 10000 })
await app.ready()
const limiter = app.createRateLimit({ max, timeWindow: windowMs, keyGenerator: (req) => /** @type {any} */ (req).key })
// What applyRateLimit reads from a request: its route's config, and (through keyGenerator) the key.
const requests = /** @type {any[]} */ (keys.map(key => ({ key, routeOptions: { config: {} } })))

let sink = 0
/** @type {Record<string, () => Promise<void> | void>} */
const sides = {
  'rate-windows': () => {
    for (let i = 0; i < ops; i++) {
      const w = windows.hit(keys[i % keyCount], Date.now())
      sink += Math.max(0, max - w.current) + w.ttl
    }
  },
  'LocalStore.incr': () => {
    const cb = (err, res) => { if (err === null) sink += Math.max(0, max - res.current) + res.ttl }
    for (let i = 0; i < ops; i++) store.incr(keys[i % keyCount], cb, windowMs, max)
  },
  createRateLimit: async () => {
    for (let i = 0; i < ops; i++) {
      const r = await limiter(requests[i % keyCount])
      if ('remaining' in r) sink += r.remaining + r.ttl
    }
  }
}
const names = Object.keys(sides)
const results = Object.fromEntries(names.map(n => [n, []]))
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]
const load = () => loadavg().map(l => l.toFixed(2)).join(' ')
process.stderr.write(`load before ${load()}; ${rounds} rounds of ${ops} counts over ${keyCount} key(s)\n`)
for (let round = 0; round < rounds + 2; round++) {
  const order = names.map((_, j) => names[(j + round) % names.length])
  for (const name of order) {
    const start = process.hrtime.bigint()
    await sides[name]()
    const ns = Number(process.hrtime.bigint() - start) / ops
    if (round >= 2) results[name].push(ns)
  }
}
await app.close()
const base = results['rate-windows']
process.stderr.write(`median ns per count: ${names.map(n => `${n} ${median(results[n]).toFixed(1)}`).join(', ')}\n`)
for (const name of names.slice(1)) {
  process.stderr.write(`  ${name}/rate-windows: median of round ratios ${median(results[name].map((x, i) => x / base[i])).toFixed(2)}\n`)
}
process.stderr.write(`load after ${load()} (${sink > 0 ? 'ok' : 'no counts'})\n`)
