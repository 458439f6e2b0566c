// The realistic mix's request stream, shared by bench/mix.mjs and bench/compare.mjs: eight API keys
// taken in turn, 65% getPet (ids Zipf-distributed with s = 1.1, or uniform), 25% listPets (limit
// 10/20/50, half with a status filter; 60% first pages, the rest pages 2–5 of a cursor walk), 10%
// creates; the same sequence of choices for every server it is sent to. Also the read cache's
// counters from a service's /metrics and the warm-up that fills that cache before a mix is measured.
import { httpCall, measure } from './lib.mjs'

/** Pets in the mix's store (MIX_PETS), and the longest warm-up before a mix is measured, in seconds (MIX_WARM_MAX_S). */
export const PETS = Number(process.env.MIX_PETS ?? 200_000)
export const WARM_MAX_S = Number(process.env.MIX_WARM_MAX_S ?? 30)
export const KEYS = Array.from({ length: 8 }, (_, i) => `psk_${String(i).repeat(43)}`)
const STATUSES = ['available', 'pending', 'sold']
const LIMITS = [10, 20, 50]
const BODY = JSON.stringify({ name: 'Rex', categoryId: 42, status: 'pending' })

function rng (seed) {
  let s = seed >>> 0
  return () => { s = (s + 0x6D2B79F5) >>> 0; let t = s; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296 }
}

/** Draws ids 1..n: uniformly, or Zipf(s) by rank with the ranks spread over the ids by a fixed shuffle. */
function idSampler (n, dist, random) {
  if (dist === 'uniform') return () => 1 + Math.floor(random() * n)
  const cdf = new Float64Array(n)
  let sum = 0
  for (let r = 0; r < n; r++) { sum += 1 / Math.pow(r + 1, 1.1); cdf[r] = sum }
  const ids = new Uint32Array(n)
  for (let i = 0; i < n; i++) ids[i] = i + 1
  const shuffle = rng(7)
  for (let i = n - 1; i > 0; i--) { const j = Math.floor(shuffle() * (i + 1)); const t = ids[i]; ids[i] = ids[j]; ids[j] = t }
  return () => {
    const u = random() * sum
    let lo = 0; let hi = n - 1
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (cdf[mid] < u) lo = mid + 1; else hi = mid }
    return ids[lo]
  }
}

/** Pages 1–5 of each (limit, status) walk, as URLs, by following the server's own Link headers. */
export async function walks (port) {
  const out = new Map()
  for (const limit of LIMITS) {
    for (const status of [undefined, ...STATUSES]) {
      const urls = [`/v1/pets?limit=${limit}${status === undefined ? '' : `&status=${status}`}`]
      while (urls.length < 5) {
        const r = await httpCall(port, 'GET', urls[urls.length - 1], { authorization: `Bearer ${KEYS[0]}` })
        const next = /<([^>]+)>; rel="next"/.exec(String(r.headers.link ?? ''))
        if (r.status !== 200 || next === null) throw new Error(`walk ${urls[urls.length - 1]}: ${r.status}, no next page`)
        urls.push(next[1])
      }
      out.set(`${limit}|${status}`, urls)
    }
  }
  return out
}

/** autocannon's per-request hook: the next request of the mix (without creates: its reads in the same proportions), each with `extra` headers. */
export function mixRequests (pages, n, dist, seed, creates = true, extra = {}) {
  const random = rng(seed)
  const id = idSampler(n, dist, random)
  let k = 0
  return [{
    setupRequest (req) {
      const key = KEYS[k++ % KEYS.length]
      const x = creates ? random() : random() * 0.9
      const headers = { authorization: `Bearer ${key}`, ...extra }
      if (x < 0.65) return { ...req, method: 'GET', path: `/v1/pets/${id()}`, headers, body: undefined }
      if (x < 0.90) {
        const limit = LIMITS[Math.floor(random() * LIMITS.length)]
        const status = random() < 0.5 ? undefined : STATUSES[Math.floor(random() * STATUSES.length)]
        const urls = pages.get(`${limit}|${status}`)
        const page = random() < 0.6 ? 0 : 1 + Math.floor(random() * (urls.length - 1))
        return { ...req, method: 'GET', path: urls[page], headers, body: undefined }
      }
      return { ...req, method: 'POST', path: '/v1/pets', headers: { ...headers, 'content-type': 'application/json' }, body: BODY }
    }
  }]
}

/**
 * One measured run of a mix (`requests` from mixRequests) against `server`.
 * @param {Parameters<typeof measure>[0]} server @param {any[]} requests @param {{ duration?: number, rate?: number }} [opts]
 */
export function loadMix (server, requests, opts = {}) {
  return measure(server, { requests, idReplacement: false, ...opts })
}

/** The read cache's counters from the service's /metrics (METRICS_PORT): hits and misses by kind, bytes held. */
export async function cacheCounters (svc) {
  const r = await httpCall(svc.metricsPort, 'GET', '/metrics')
  const text = r.body.toString()
  const value = (name, kind) => {
    const prefix = kind === undefined ? `${name} ` : `${name}{kind="${kind}"} `
    const line = text.split('\n').find(l => l.startsWith(prefix))
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return {
    ...Object.fromEntries(['pet', 'page'].map(kind => [kind, { hits: value('petstore_read_cache_hits_total', kind), misses: value('petstore_read_cache_misses_total', kind) }])),
    bytes: value('petstore_read_cache_bytes')
  }
}

export const hitRate = (a, b, kind) => {
  const hits = b[kind].hits - a[kind].hits
  const all = hits + b[kind].misses - a[kind].misses
  return all === 0 ? NaN : hits / all
}

/**
 * Runs the mix (`stream(seed)`) against the service in 2-second rounds until its read cache is full
 * (95% of `budgetBytes`) or the pet hit rate of a round is within one point of the round before, at
 * most `maxSeconds`: the service measured warm, as an instance that has been serving for a while.
 * Returns how many seconds it took.
 */
export async function warmUp (svc, stream, budgetBytes, maxSeconds) {
  let seconds = 0
  let previous = NaN
  let counters = await cacheCounters(svc)
  for (let round = 1; seconds < maxSeconds; round++) {
    await loadMix(svc, stream(100 + round), { duration: 2 })
    seconds += 2
    const now = await cacheCounters(svc)
    const rate = hitRate(counters, now, 'pet')
    counters = now
    if (now.bytes >= 0.95 * budgetBytes || Math.abs(rate - previous) < 0.01) break
    previous = rate
  }
  return seconds
}
