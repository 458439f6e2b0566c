// requires: postgresql
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import pg from 'pg'
import { loadConfig } from '../../src/config.js'
import { StoreUnavailableError } from '../../src/errors.js'
import { openStore } from '../../src/store/index.js'
import { PET_INSERT_LOCK_KEY } from '../../src/store/postgres/index.js'
import { createTestDatabase } from '../helpers/app.js'

describe('PostgreSQL store', () => {
  it('runs with synchronous_commit on and parses int8 to BigInt', async (t) => {
    const url = await createTestDatabase(t)
    const store = await openStore(loadConfig({ DATABASE_URL: url }))
    try {
      const pool = (store as unknown as { pool: pg.Pool }).pool
      const res = await pool.query<{ sc: string, n: bigint }>("SELECT current_setting('synchronous_commit') AS sc, 9007199254740993::int8 AS n")
      assert.deepEqual(res.rows[0], { sc: 'on', n: 9007199254740993n })
    } finally {
      await store.close()
    }
  })

  it('makes a create wait while another instance holds ids it has not committed yet', async (t) => {
    // The other instance's insert, caught mid-transaction: it holds the insert lock and an id.
    const url = await createTestDatabase(t)
    const store = await openStore(loadConfig({ DATABASE_URL: url }))
    const other = new pg.Client({ connectionString: url })
    await other.connect()
    try {
      await other.query('BEGIN')
      await other.query('SELECT pg_advisory_xact_lock($1::int8)', [PET_INSERT_LOCK_KEY.toString()])
      const held = await other.query<{ id: string }>("INSERT INTO pets (name, category_id, status) VALUES ('\\x6f6c64'::bytea, 1, 'available') RETURNING id")
      let settled = false
      const creating = store.createPet({ name: 'new', categoryId: 2n, status: 'available' }).finally(() => { settled = true })
      // Wait until the create is queued behind the lock (seen by the server), or has wrongly finished.
      for (;;) {
        const waiting = await other.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        if (waiting.rows[0].n > 0 || settled) break
        await new Promise(resolve => setTimeout(resolve, 20))
      }
      assert.equal(settled, false, 'a create finished while a lower id was still uncommitted')
      assert.deepEqual(await store.listPets({ afterId: null, limit: 10, status: undefined }), [])
      await other.query('COMMIT')
      const pet = await creating
      assert.equal(pet.id, BigInt(held.rows[0]!.id) + 1n)
      const walk = await store.listPets({ afterId: null, limit: 10, status: undefined })
      assert.deepEqual(walk.map(p => [p.id, p.name]), [[pet.id - 1n, 'old'], [pet.id, 'new']])
    } finally {
      await other.end()
      await store.close()
    }
  })

  it('answers StoreUnavailableError, promptly, when nothing listens at the URL', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const { port } = srv.address() as { port: number }
        srv.close(() => resolve(port))
      })
    })
    await assert.rejects(openStore(loadConfig({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x` })), StoreUnavailableError)
  })

  it('answers StoreUnavailableError when the server accepts but never answers', async (t) => {
    // A listener that never speaks PostgreSQL: only the connect timeout can end the wait.
    const silent = createServer(() => {})
    await new Promise<void>(resolve => silent.listen(0, '127.0.0.1', resolve))
    t.after(() => { silent.close() })
    const { port } = silent.address() as { port: number }
    const config = loadConfig({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x`, PG_CONNECT_TIMEOUT_MS: '300' })
    await assert.rejects(openStore(config), StoreUnavailableError)
  })
})
