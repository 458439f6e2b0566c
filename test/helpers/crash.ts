import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { httpRequest, makeKey, startServerProcess, waitReady } from './server-process.js'

/*
 * Crash consistency: writers create pets with unique names against the real server process while it
 * is killed with SIGKILL at a random moment; after each restart the store must hold every
 * acknowledged pet (with its acknowledged id), nothing never sent or refused, no duplicates, and
 * pass PRAGMA integrity_check.
 */
export interface CrashOptions {
  dbPath: string
  rounds: number
  writers: number
  /** Stop starting rounds after this long (the round in progress finishes). */
  maxMs?: number
  killAfterMs: [number, number]
  log?: (line: string) => void
}

export interface CrashStats {
  rounds: number
  acknowledged: number
  failed: number
  unknown: number
  unknownStored: number
  stored: number
  violations: string[]
}

type Outcome = { kind: 'ack', id: bigint } | { kind: 'failed', status: number } | { kind: 'unknown', error: string }

export async function runCrashRounds (opts: CrashOptions): Promise<CrashStats> {
  const key = await makeKey(opts.dbPath)
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const outcomes = new Map<string, Outcome>()
  const stats: CrashStats = { rounds: 0, acknowledged: 0, failed: 0, unknown: 0, unknownStored: 0, stored: 0, violations: [] }
  const started = Date.now()

  for (let round = 0; round < opts.rounds; round++) {
    if (opts.maxMs !== undefined && Date.now() - started > opts.maxMs) break
    const server = await startServerProcess(opts.dbPath)
    // Writers start when the instance says it takes them, as a load balancer's traffic would: the
    // kill then falls while creates are being acknowledged, not while the writer thread boots.
    await waitReady(server.port)
    // After a restart: the previous rounds' outcomes must all hold.
    if (round > 0) await verify(opts.dbPath, server.port, key, outcomes, stats)

    let stop = false
    let firstAck: () => void = () => {}
    const acked = new Promise<void>(resolve => { firstAck = resolve })
    const writer = async (w: number): Promise<void> => {
      for (let seq = 0; !stop; seq++) {
        const name = `r${round}-w${w}-${seq}`
        try {
          const res = await httpRequest(server.port, 'POST', '/v1/pets', auth, JSON.stringify({ name, categoryId: seq }))
          if (res.status === 201) {
            outcomes.set(name, { kind: 'ack', id: BigInt(/"id":(\d+)/.exec(res.body)![1]!) })
            firstAck()
          } else outcomes.set(name, { kind: 'failed', status: res.status })
        } catch (err) {
          const code = (err as { code?: string }).code
          // Refused connections never reached the server: the create was not sent.
          if (code === 'ECONNREFUSED') { stop = true; return }
          outcomes.set(name, { kind: 'unknown', error: code ?? (err as Error).message })
          stop = true
        }
      }
    }
    const writing = Promise.all(Array.from({ length: opts.writers }, (_, w) => writer(w)))
    const [lo, hi] = opts.killAfterMs
    // Until some create has been acknowledged, a round's random moment counts from its first
    // acknowledgement: on a loaded machine (slow fsyncs) every kill could otherwise fall before any
    // answer, and the run would check nothing acknowledged. Once there is one, rounds count from
    // their start, so kills also fall on a fresh start's first batch. A minute without any is a
    // bound for a server that acknowledges nothing (then the caller's check fails), not an expectation.
    if (count(outcomes, 'ack') === 0) {
      const bound = new AbortController()
      await Promise.race([acked, sleep(60_000, undefined, { signal: bound.signal }).catch(() => {})])
      bound.abort()
    }
    await sleep(lo + Math.random() * (hi - lo))
    server.proc.kill('SIGKILL')
    await server.exited
    stop = true
    await writing
    stats.rounds++
    opts.log?.(`round ${round}: killed; ${count(outcomes, 'ack')} acknowledged so far`)
  }
  // The last kill is checked after one more restart.
  const server = await startServerProcess(opts.dbPath)
  try {
    await verify(opts.dbPath, server.port, key, outcomes, stats)
  } finally {
    server.proc.kill('SIGKILL')
    await server.exited
  }
  stats.acknowledged = count(outcomes, 'ack')
  stats.failed = count(outcomes, 'failed')
  stats.unknown = count(outcomes, 'unknown')
  return stats
}

function count (outcomes: Map<string, Outcome>, kind: Outcome['kind']): number {
  let n = 0
  for (const o of outcomes.values()) if (o.kind === kind) n++
  return n
}

async function verify (dbPath: string, port: number, key: string, outcomes: Map<string, Outcome>, stats: CrashStats): Promise<void> {
  const bad = (msg: string) => { if (stats.violations.length < 50) stats.violations.push(msg) }
  // A second connection beside the running server (WAL lets readers in).
  const db = new Database(dbPath, { readonly: true })
  db.defaultSafeIntegers(true)
  try {
    const integrity = db.pragma('integrity_check', { simple: true })
    if (integrity !== 'ok') bad(`integrity_check: ${String(integrity)}`)
    const rows = db.prepare('SELECT id, name FROM pets').all() as Array<{ id: bigint, name: string }>
    const byName = new Map<string, bigint>()
    for (const r of rows) {
      if (byName.has(r.name)) bad(`duplicate pet name ${r.name}`)
      byName.set(r.name, r.id)
      const o = outcomes.get(r.name)
      if (o === undefined) bad(`stored but never sent: ${r.name}`)
      else if (o.kind === 'failed') bad(`stored although answered ${o.status}: ${r.name}`)
    }
    let unknownStored = 0
    for (const [name, o] of outcomes) {
      if (o.kind === 'ack' && byName.get(name) !== o.id) bad(`acknowledged ${name} (id ${o.id}) is ${byName.has(name) ? `stored as id ${byName.get(name)}` : 'missing'}`)
      if (o.kind === 'unknown' && byName.has(name)) unknownStored++
    }
    stats.unknownStored = unknownStored
    stats.stored = rows.length
  } finally {
    db.close()
  }
  // And the restarted server answers for an acknowledged pet.
  const lastAck = [...outcomes.values()].reverse().find(o => o.kind === 'ack')
  if (lastAck?.kind === 'ack') {
    const res = await httpRequest(port, 'GET', `/v1/pets/${lastAck.id}`, { authorization: `Bearer ${key}` })
    if (res.status !== 200) bad(`GET acknowledged pet ${lastAck.id} after restart: ${res.status}`)
  }
}
