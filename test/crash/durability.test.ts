// requires: strace
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import type { SynchronousLevel } from '../../src/store/sqlite/connection.js'
import { tempDir } from '../helpers/app.js'
import { httpRequest, makeKey, startServerProcess } from '../helpers/server-process.js'
import { onCleanup } from '../helpers/cleanup.js'

/*
 * A SIGKILL cannot tell synchronous=FULL from NORMAL (the OS keeps written pages either way), so the
 * durability promise is checked where it lives: every acknowledged create must have an fsync or
 * fdatasync of the WAL file between its request and its 201, counted with strace on the real process.
 */
interface Sync { ts: number, path: string }

function walSyncs (traceFile: string): Sync[] {
  const out: Sync[] = []
  for (const line of readFileSync(traceFile, 'utf8').split('\n')) {
    const m = /^\d+ +(\d+\.\d+) (?:fsync|fdatasync)\(\d+<([^>]+)>/.exec(line)
    if (m !== null && m[2]!.endsWith('-wal')) out.push({ ts: Number(m[1]) * 1000, path: m[2]! })
  }
  return out
}

async function traced (t: TestContext, synchronous: SynchronousLevel) {
  const dir = tempDir(t)
  const db = join(dir, 'dur.db')
  const key = await makeKey(db)
  const trace = join(dir, 'strace.txt')
  const server = await startServerProcess(db, {
    storeOptions: { sqliteSynchronous: synchronous },
    wrap: ['strace', '-f', '-ttt', '-y', '-e', 'trace=fsync,fdatasync', '-o', trace]
  })
  // Stop node itself (not strace, which would detach and leave it running); strace then exits.
  const stop = async () => {
    const children = readdirSync(`/proc/${server.proc.pid}/task`).flatMap(tid => readFileSync(`/proc/${server.proc.pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean))
    for (const pid of children) process.kill(Number(pid), 'SIGTERM')
    await server.exited
  }
  onCleanup(t, async () => { if (server.proc.exitCode === null && server.proc.signalCode === null) await stop() })
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const create = (name: string) => httpRequest(server.port, 'POST', '/v1/pets', auth, JSON.stringify({ name, categoryId: 1 }))
  return { create, stop, trace }
}

describe('durability is FULL: an fsync of the WAL before every acknowledgement', () => {
  it('each sequential create has its own WAL sync inside its request; a burst shares syncs (group commit)', async (t) => {
    const { create, stop, trace } = await traced(t, 'FULL')
    const windows: Array<[number, number]> = []
    for (let i = 0; i < 20; i++) {
      const sent = Date.now()
      const res = await create(`seq-${i}`)
      assert.equal(res.status, 201, res.body)
      windows.push([sent, Date.now()])
    }
    const burstStart = Date.now()
    const burst = await Promise.all(Array.from({ length: 200 }, (_, i) => create(`burst-${i}`)))
    const burstEnd = Date.now()
    assert.ok(burst.every(r => r.status === 201))
    await stop()

    const syncs = walSyncs(trace)
    // strace stamps to the microsecond, Date.now() to the millisecond: allow 1 ms either side.
    const inWindow = ([a, b]: [number, number]) => syncs.filter(s => s.ts >= a - 1 && s.ts <= b + 1)
    for (const [i, w] of windows.entries()) assert.ok(inWindow(w).length >= 1, `create ${i} was acknowledged without a WAL sync during its request`)
    const seqSyncs = inWindow([windows[0]![0], windows.at(-1)![1]]).length
    assert.ok(seqSyncs >= windows.length, `${seqSyncs} WAL syncs for ${windows.length} sequential creates`)
    const burstSyncs = inWindow([burstStart, burstEnd]).length
    assert.ok(burstSyncs >= 1 && burstSyncs <= burst.length, `${burstSyncs} syncs for the burst`)
    t.diagnostic(`FULL: ${seqSyncs} WAL syncs for 20 sequential creates (each create had one inside its request); ${burstSyncs} syncs for a burst of 200 concurrent creates (${(200 / burstSyncs).toFixed(1)} creates per sync)`)
  })

  it('the check can tell: under synchronous=NORMAL (a store option users cannot set) the same creates see no WAL sync', async (t) => {
    const { create, stop, trace } = await traced(t, 'NORMAL')
    const start = Date.now()
    for (let i = 0; i < 20; i++) assert.equal((await create(`seq-${i}`)).status, 201)
    const end = Date.now()
    await stop()
    const during = walSyncs(trace).filter(s => s.ts >= start && s.ts <= end).length
    assert.equal(during, 0)
    t.diagnostic(`NORMAL: ${during} WAL syncs for 20 sequential creates`)
  })
})
