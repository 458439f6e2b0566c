// requires: redis-server
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { runCli, runServerToExit, startServer, waitForOutput } from '../helpers/process.js'
import { startRedisServer } from '../helpers/redis.js'
import { freePort } from '../helpers/server.js'

/** How an instance's clients fare when the Redis that holds the shared rate-limit counters fails (docs/explanation/scaling.md). */
describe('Redis outage (compiled server)', () => {
  it('lets requests through unlimited while Redis is down, says so once (and once when it is back), and limits again once Redis is back', async (t) => {
    const redis = await startRedisServer(t)
    const dir = tempDir(t)
    const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, REDIS_URL: redis.url, RATE_LIMIT_MAX: '2', LOG_LEVEL: 'info' }
    const made = await runCli(['keys', 'create', '--create', '--name', 'redis'], env)
    assert.equal(made.code, 0, made.stderr)
    const server = await startServer(t, env)
    const get = async () => {
      const res = await fetch(`${server.url}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${made.stdout.trim()}` } })
      await res.arrayBuffer()
      return { status: res.status, ratelimit: res.headers.get('ratelimit') }
    }
    assert.deepEqual((await Promise.all([get(), get()])).map(r => r.status).concat((await get()).status).sort(), [200, 200, 429])

    const mark = server.stdout().length
    await redis.stop()
    const during = []
    for (let i = 0; i < 6; i++) during.push(await get())
    assert.deepEqual(during, Array.from({ length: 6 }, () => ({ status: 200, ratelimit: null })), 'unlimited, and no RateLimit header it cannot vouch for')
    // Log lines are written a few milliseconds after the answers: wait for the line saying Redis went.
    await waitForOutput(server, /"msg":"the rate-limit Redis \(REDIS_URL\) is unavailable: requests are let through without rate limits/)

    // Back, empty: the instance reconnects by itself (no restart) and counts again from zero.
    await redis.start()
    let first = await get()
    for (let waited = 0; first.ratelimit === null; waited += 100) {
      assert.equal(first.status, 200)
      if (waited > 30000) throw new Error('the instance did not count in Redis again within 30 s of its return')
      await new Promise(resolve => setTimeout(resolve, 100))
      first = await get()
    }
    assert.deepEqual([first, await get(), await get()].map(r => r.status), [200, 200, 429])
    await waitForOutput(server, /"msg":"the rate-limit Redis \(REDIS_URL\) is back after/)
    // One line when it went (with the cause), one when it was back, none per request, no stack.
    const lines = server.stdout().slice(mark).split('\n').filter(l => l !== '' && !l.includes('"msg":"request completed"'))
    assert.equal(lines.filter(l => l.includes('is unavailable: requests are let through')).length, 1, lines.join('\n'))
    assert.equal(lines.filter(l => l.includes('is back after')).length, 1, lines.join('\n'))
    assert.ok(lines.every(l => l.includes('"dependency":"redis"')), lines.join('\n'))
    assert.match(lines[0]!, /"level":40,.*"cause":"[^"]+"/)
    assert.doesNotMatch(lines.join('\n'), /"stack"/)
    assert.equal(server.child.exitCode, null, 'the instance kept running throughout')
  })

  it('an instance whose REDIS_URL cannot be reached at start exits 1 naming REDIS_URL', async (t) => {
    const port = await freePort() // nothing listens there
    const dir = tempDir(t)
    const r = await runServerToExit({ DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, REDIS_URL: `redis://127.0.0.1:${port}`, HOST: '127.0.0.1', PORT: '0' })
    assert.equal(r.code, 1, r.stderr)
    assert.match(r.stderr, /REDIS_URL/)
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'one line, not a stack trace')
  })
})
