import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { STORES, tempDir, testDatabaseUrl } from '../helpers/app.js'
import { runCli, startServer } from '../helpers/process.js'

const WRITERS = 4

for (const store of STORES) {
  describe(`petstore backup [${store}]`, () => {
    it('takes a verified backup while writers create pets: it holds every pet acknowledged before it started', async (t) => {
      const dir = tempDir(t)
      const env = { DATABASE_URL: await testDatabaseUrl(t, store, dir), RATE_LIMIT_MAX: '0' }
      const key = (await runCli(['keys', 'create', '--name', 'writer', '--create'], env)).stdout.trim()
      const server = await startServer(t, env)

      // Writers create pets until told to stop; every 201 is recorded with its id.
      const acked: bigint[] = []
      let stop = false
      const writers = Array.from({ length: WRITERS }, async (_, w) => {
        for (let i = 0; !stop; i++) {
          const res = await fetch(`${server.url}/v1/pets`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `w${w} #${i}`, categoryId: w })
          })
          const body = await res.text()
          assert.equal(res.status, 201, body)
          acked.push(BigInt(/"id":(\d+)/.exec(body)![1]!))
        }
      })
      while (acked.length < 300) await new Promise(resolve => setTimeout(resolve, 20))

      const before = new Set(acked)
      const path = join(dir, store === 'sqlite' ? 'backup.db' : 'backup.ndjson')
      const backup = await runCli(['backup', path, '--json'], env)
      const during = acked.length
      await new Promise(resolve => setTimeout(resolve, 200))
      stop = true
      await Promise.all(writers)
      assert.equal(backup.code, 0, backup.stderr)
      assert.ok(acked.length > during, 'the writers kept creating pets through the backup')

      // The backup as a store: SQLite is the file itself; PostgreSQL's export file is imported into a fresh SQLite store.
      let file = path
      if (store !== 'sqlite') { // postgres, direct or through PgBouncer
        file = join(dir, 'restored.db')
        const restored = await runCli(['import', path], { DATABASE_URL: `sqlite:${file}` })
        assert.equal(restored.code, 0, restored.stderr)
      }
      const db = new Database(file, { readonly: true })
      let ids: Set<bigint>
      try {
        db.defaultSafeIntegers(true)
        assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
        ids = new Set((db.prepare('SELECT id FROM pets').all() as Array<{ id: bigint }>).map(r => r.id))
      } finally {
        db.close()
      }
      const summary = JSON.parse(backup.stdout) as { counts: { pets: number } }
      assert.equal(summary.counts.pets, ids.size)
      for (const id of before) assert.ok(ids.has(id), `pet ${id}, acknowledged before the backup started, is in it`)
      // A prefix: no acknowledged pet is missing below the highest id the backup holds.
      const highest = [...ids].reduce((a, b) => (a > b ? a : b))
      for (const id of acked) if (id <= highest) assert.ok(ids.has(id), `pet ${id} is below the backup's highest id ${highest}`)

      const again = await runCli(['backup', path], env)
      assert.deepEqual([again.code, again.stderr], [1, `petstore: ${path} already exists; a backup never overwrites a file\n`])
    })

    it('creates the folder of PATH when it does not exist yet', async (t) => {
      const dir = tempDir(t)
      const env = { DATABASE_URL: await testDatabaseUrl(t, store, dir) }
      assert.equal((await runCli(['migrate'], env)).code, 0)
      const path = join(dir, 'backups', 'first', 'petstore.backup')
      const backup = await runCli(['backup', path], env)
      assert.equal(backup.code, 0, backup.stderr)
      assert.ok(existsSync(path), `${path} was written`)
    })
  })
}
