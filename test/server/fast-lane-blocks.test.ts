import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createApiKey } from '../../src/services/api-keys.js'
import { loadConfig } from '../../src/config.js'
import { openStore } from '../../src/store/index.js'
import { tempDir } from '../helpers/app.js'
import { metricsUrlOf, startServer } from '../helpers/process.js'

// An address blocked for failed authentication turns the fast lane off for every client (which
// address a request is from is Fastify's to work out, with TRUST_PROXY), but only while the block
// is in force: once it has ended, cached reads are answered by the lane again, whether or not the
// blocked address ever comes back (src/plugins/rate-limit.ts, admitsAtOnce).
describe('the fast lane and address blocks', () => {
  it('answers again once every address block has ended, though the blocked client never comes back', async (t) => {
    const db = join(tempDir(t), 'blocks.db')
    const store = await openStore(loadConfig({ DATABASE_URL: `sqlite:${db}` }))
    let key: string
    try {
      key = (await createApiKey(store, 'reader')).key
      await store.createPet({ name: 'Rex', categoryId: 1n, status: 'available' })
    } finally {
      await store.close()
    }
    // Clients told apart by X-Forwarded-For (the test's requests all come from loopback).
    const server = await startServer(t, { DATABASE_URL: `sqlite:${db}`, METRICS_PORT: '0', RATE_LIMIT_ANON_MAX: '2', RATE_LIMIT_WINDOW_MS: '1000', TRUST_PROXY: 'loopback' })
    const metricsUrl = await metricsUrlOf(server)
    const laneAnswers = async (): Promise<number> =>
      Number(/^petstore_fast_lane_responses_total (\d+)$/m.exec(await (await fetch(metricsUrl)).text())?.[1] ?? NaN)
    const read = async (): Promise<void> => {
      const res = await fetch(`${server.url}/v1/pets/1`, { headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': '10.0.0.1' } })
      assert.equal(res.status, 200)
      await res.arrayBuffer()
    }

    // Whether the lane answers one of a few cached reads: a read just after the key cache's entry
    // ran out (KEY_CACHE_TTL_MS, 500 ms; a loaded machine can take that long between two requests)
    // goes to Fastify, which verifies the key again, and the next is the lane's.
    const laneTakesARead = async (): Promise<boolean> => {
      for (let i = 0; i < 20; i++) {
        const before = await laneAnswers()
        await read()
        if (await laneAnswers() > before) return true
      }
      return false
    }

    await read() // a miss: the store's answer fills the cache
    assert.ok(await laneTakesARead(), 'a cached read is the lane\'s')

    // Bad keys from another client until its address is blocked (429), for the 1 s window.
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/v1/pets/1`, { headers: { authorization: 'Bearer psk_wrong', 'x-forwarded-for': '10.0.0.9' } })
      statuses.push(res.status)
      await res.arrayBuffer()
    }
    assert.deepEqual(statuses, [401, 401, 429])
    await read() // the other client still reads, through Fastify while the block is in force
    await new Promise(resolve => setTimeout(resolve, 1500)) // the block ends; the blocked client never comes back
    assert.ok(await laneTakesARead(), 'once every block has ended, the lane answers again')
  })
})
