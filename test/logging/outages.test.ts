import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import pino from 'pino'
import { StoreUnavailableError } from '../../src/errors.js'
import { Outages } from '../../src/logging/outages.js'
import { onCleanup } from '../helpers/cleanup.js'

interface Line { level: number, msg: string, dependency: string, failed?: number, cause?: string, code?: string, err?: unknown }

/** A pino logger writing into an array, and the outage log over it with short intervals. */
function outageLog (t: Parameters<typeof onCleanup>[0]) {
  const lines: Line[] = []
  const stream = new Writable({ write (chunk: Buffer, _enc, done) { lines.push(JSON.parse(chunk.toString()) as Line); done() } })
  const outages = new Outages(pino(stream), { summaryEveryMs: 200, quietMs: 300, tickMs: 50 })
  onCleanup(t, () => outages.close())
  return { lines, outages }
}

const sleep = async (ms: number) => await new Promise(resolve => setTimeout(resolve, ms))

const refused = () => new StoreUnavailableError('the database is unavailable', { cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:5432'), { code: 'ECONNREFUSED' }) })

async function until (what: string, cond: () => boolean): Promise<void> {
  for (let waited = 0; !cond(); waited += 20) {
    if (waited > 10000) throw new Error(`gave up waiting for ${what}`)
    await sleep(20)
  }
}

describe('the outage log', () => {
  it('stays open while requests keep failing, even as the dependency answers others (a full disk: reads go on), and closes once the failures stop', async (t) => {
    const { lines, outages } = outageLog(t)
    const start = Date.now()
    let failed = 0
    for (let i = 0; i < 50; i++) {
      outages.failed('sqlite', refused())
      failed++
      outages.ok('sqlite')
      await sleep(20)
    }
    const elapsed = Date.now() - start
    assert.deepEqual(lines.filter(l => l.msg.includes('is back after')), [], 'not back while requests fail')
    const going = lines.filter(l => l.msg.includes('is unavailable'))
    assert.equal(going.length, 1)
    assert.deepEqual({ level: going[0]!.level, dependency: going[0]!.dependency, cause: going[0]!.cause, code: going[0]!.code },
      { level: 50, dependency: 'sqlite', cause: 'the database is unavailable: connect ECONNREFUSED 10.0.0.7:5432', code: 'ECONNREFUSED' })
    const summaries = lines.filter(l => l.msg.includes('is still unavailable'))
    assert.ok(summaries.length >= 1 && summaries.length <= 1 + Math.floor(elapsed / 200), `${summaries.length} summaries in ${elapsed} ms`)
    assert.ok(lines.every(l => l.err === undefined && !JSON.stringify(l).includes('"stack"')), 'no stack')

    outages.ok('sqlite')
    await until('the line saying it is back', () => lines.some(l => l.msg.includes('is back after')))
    const back = lines.filter(l => l.msg.includes('is back after'))
    assert.equal(back.length, 1)
    assert.deepEqual({ level: back[0]!.level, failed: back[0]!.failed }, { level: 30, failed })
    assert.equal(outages.isDown('sqlite'), false)
  })

  it('learns that a dependency is back from its probe when no request tells, and a new outage is logged afresh', async (t) => {
    const { lines, outages } = outageLog(t)
    let answers = false
    let probes = 0
    const probe = async () => { probes++; if (!answers) throw refused() }
    outages.failed('postgres', refused(), probe)
    await until('a probe', () => probes >= 2)
    assert.equal(outages.isDown('postgres'), true)
    answers = true
    await until('the line saying it is back', () => lines.some(l => l.msg.includes('is back after')))
    assert.equal(lines.length, 2)
    assert.equal(lines[0]!.level, 50)
    assert.match(lines[0]!.msg, /^PostgreSQL \(DATABASE_URL\) is unavailable: requests that need the store are answered 503/)
    assert.equal(lines[1]!.level, 30)
    assert.match(lines[1]!.msg, /^PostgreSQL \(DATABASE_URL\) is back after \d+\.\d s; 1 requests failed on it meanwhile$/)
    assert.equal(lines[1]!.failed, 1)

    outages.failed('postgres', refused(), probe)
    assert.equal(lines.filter(l => l.msg.includes('is unavailable')).length, 2, 'a new outage has its own first line')
  })

  it('says Redis going at warn: requests go through uncounted, none fails', async (t) => {
    const { lines, outages } = outageLog(t)
    outages.failed('redis', new Error('Connection is closed.'))
    outages.failed('redis', new Error('Connection is closed.'))
    outages.ok('redis')
    await until('the line saying it is back', () => lines.some(l => l.msg.includes('is back after')))
    const [going, ...rest] = lines
    const back = rest.pop()!
    assert.equal(going!.level, 40)
    assert.match(going!.msg, /^the rate-limit Redis \(REDIS_URL\) is unavailable: requests are let through without rate limits/)
    for (const l of rest) assert.match(l.msg, /^the rate-limit Redis \(REDIS_URL\) is still unavailable: 1 requests went through uncounted in the last/)
    assert.equal(back.level, 30)
    assert.match(back.msg, /; 2 requests went through uncounted meanwhile$/)
  })
})
