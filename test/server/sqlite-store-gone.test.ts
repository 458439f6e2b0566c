import assert from 'node:assert/strict'
import { closeSync, copyFileSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import Database from 'better-sqlite3'
import { tempDir } from '../helpers/app.js'
import { checkResponse } from '../helpers/conformance.js'
import { makeKey } from '../helpers/server-process.js'
import { runServerToExit, startServer, waitForOutput, type RunningServer } from '../helpers/process.js'

/*
 * The SQLite file removed, replaced or overwritten under the compiled server while clients create:
 * no create sent after the change is acknowledged, /readyz answers 503 store_gone naming the cause,
 * one error line says what happened, and what is on disk afterwards is what a restart needs.
 */

const BODY = '{"name":"Rex","categoryId":1}'
const WRITERS = 8

interface Answer { afterChange: boolean, status: number, code: string | undefined, id: number | undefined }

/**
 * Creates from WRITERS clients in a loop; `change` runs (synchronously) once some creates are
 * acknowledged. Each answer is recorded with whether its request was sent after the change had
 * completed. Stops once every writer has had a refusal after the change.
 */
async function createsAcross (server: RunningServer, auth: Record<string, string>, change: () => void): Promise<Answer[]> {
  const answers: Answer[] = []
  let changed = false
  let created = 0
  const writer = async (): Promise<void> => {
    for (let refusedAfter = 0, n = 0; refusedAfter < 5 && n < 50_000; n++) {
      const afterChange = changed
      const res = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: BODY })
      const text = await res.text()
      const body = JSON.parse(text) as { code?: string, id?: number }
      answers.push({ afterChange, status: res.status, code: body.code, id: res.status === 201 ? body.id : undefined })
      if (res.status === 201 && ++created === 100 && !changed) {
        change()
        changed = true
      }
      if (afterChange && res.status !== 201) refusedAfter++
    }
  }
  await Promise.all(Array.from({ length: WRITERS }, writer))
  return answers
}

async function readyz (server: RunningServer) {
  const res = await fetch(`${server.url}/readyz`)
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() }
}

/** The whole of what a change under load must give: refusals, readiness, the one line. */
async function assertGone (server: RunningServer, answers: Answer[], reason: string): Promise<void> {
  const acked = answers.filter(a => a.status === 201)
  assert.ok(acked.length >= 100, 'creates were acknowledged before the change')
  const ackedAfter = answers.filter(a => a.afterChange && a.status === 201)
  assert.equal(ackedAfter.length, 0, `no create sent after the change is acknowledged (${ackedAfter.length} were)`)
  const others = answers.filter(a => a.status !== 201)
  assert.ok(others.length >= WRITERS * 5)
  for (const a of others) assert.deepEqual([a.status, a.code], [503, 'store_gone'])

  const ready = await readyz(server)
  assert.equal(ready.status, 503)
  const body = JSON.parse(ready.body) as { code: string, message: string }
  assert.equal(body.code, 'store_gone')
  assert.match(body.message, new RegExp(`database file was ${reason}`))
  checkResponse({ method: 'GET', url: '/readyz', status: ready.status, headers: ready.headers, body: ready.body })

  const line = new RegExp(`"level":50,[^\\n]*"reason":"${reason}","msg":"SQLite store gone: [^"]+(Stop this instance|restore)`)
  await waitForOutput(server, line)
  assert.equal(server.stdout().split('\n').filter(l => l.includes('SQLite store gone')).length, 1, 'one line, not one per refused request')
}

/**
 * The copy the server wrote of the store it had (removed or replaced): every acknowledged create is
 * in it, it is a sound database, readable by this user only.
 */
async function assertCopyHoldsEveryAcknowledged (server: RunningServer, dir: string, answers: Answer[]): Promise<void> {
  await waitForOutput(server, /"msg":"SQLite store copy written: /)
  const copies = readdirSync(dir).filter(f => /^petstore\.db\.gone-[^-]/.test(f) && !f.includes('-wal') && !f.includes('-shm'))
  assert.equal(copies.length, 1, readdirSync(dir).join(' '))
  const copy = join(dir, copies[0]!)
  assert.equal((statSync(copy).mode & 0o777).toString(8), '600')
  const db = new Database(copy, { readonly: true })
  try {
    assert.equal(db.pragma('quick_check', { simple: true }), 'ok')
    const ids = new Set((db.prepare('SELECT id FROM pets').pluck().all() as number[]).map(Number))
    const acked = answers.filter(a => a.status === 201).map(a => a.id!)
    assert.deepEqual(acked.filter(id => !ids.has(id)), [], 'every acknowledged pet is in the copy')
  } finally {
    db.close()
  }
}

async function stop (server: RunningServer): Promise<void> {
  server.child.kill('SIGTERM')
  const { code } = await server.exited
  assert.equal(code, 0, server.stdout())
}

async function setUp (t: TestContext) {
  const dir = tempDir(t)
  const db = join(dir, 'petstore.db')
  const auth = { authorization: `Bearer ${await makeKey(db)}` }
  const server = await startServer(t, { DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'info' })
  return { dir, db, auth, server }
}

describe('the SQLite file gone from under the compiled server, under create load', () => {
  it('removed (rm of the database, its WAL and shm): creates refused, /readyz 503, one line, a copy with every acknowledged create; the restart refuses to start an empty store', async (t) => {
    const { dir, db, auth, server } = await setUp(t)
    const answers = await createsAcross(server, auth, () => {
      // As `rm petstore.db*` would: the database itself is there; its WAL and shm are removed when present.
      rmSync(db)
      for (const suffix of ['-wal', '-shm']) rmSync(`${db}${suffix}`, { force: true })
    })
    await assertGone(server, answers, 'removed')
    await assertCopyHoldsEveryAcknowledged(server, dir, answers)
    await stop(server)

    const restart = await runServerToExit({ DATABASE_URL: `sqlite:${db}`, PORT: '0' })
    assert.equal(restart.code, 1)
    assert.match(restart.stderr, /^petstore: cannot start: the SQLite database \S+petstore\.db does not exist, but \S+petstore\.db\.store-id says store \d+ was created there: [^\n]+delete \S+petstore\.db\.store-id and start again\n$/)
    assert.doesNotMatch(restart.stdout, /API key/, 'no new first key')
  })

  it('replaced (a backup moved over it): creates refused, /readyz 503, one line, a copy with every acknowledged create; the backup is left as it was and serves on restart', async (t) => {
    const { dir, db, auth, server } = await setUp(t)
    const backup = join(dir, 'backup.db')
    let restored: Buffer | undefined
    const answers = await createsAcross(server, auth, () => {
      // What `petstore backup` would give: a consistent copy (here, of the file as the checkpoints left it, with the key).
      copyFileSync(db, backup)
      restored = readFileSync(backup)
      renameSync(backup, db)
    })
    await assertGone(server, answers, 'replaced')
    await assertCopyHoldsEveryAcknowledged(server, dir, answers)
    await stop(server)
    assert.deepEqual(readFileSync(db), restored, 'nothing was checkpointed into the restored file')
    assert.equal(readdirSync(dir).filter(f => f.startsWith('petstore.db-wal.gone-')).length, 1, 'the old WAL is set aside, not left to be replayed')

    const again = await startServer(t, { DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'info' })
    assert.equal((await readyz(again)).status, 200)
    const list = await fetch(`${again.url}/v1/pets`, { headers: auth })
    assert.equal(list.status, 200, 'the restored store, with its key')
    await stop(again)
  })

  it('overwritten in place (cat other.db > petstore.db): creates refused, /readyz 503, one line; the other store is left intact, and served only once the marker is deleted', async (t) => {
    const { dir, db, auth, server } = await setUp(t)
    const other = join(dir, 'other.db')
    const otherAuth = { authorization: `Bearer ${await makeKey(other)}` }
    const bytes = readFileSync(other)
    const answers = await createsAcross(server, auth, () => { writeFileSync(db, bytes) })
    await assertGone(server, answers, 'overwritten')
    await stop(server)
    assert.deepEqual(readFileSync(db), bytes, 'the close checkpointed nothing into the file that is there now')

    // A restart refuses the other store (the marker names this one), until the marker is deleted.
    const refused = await runServerToExit({ DATABASE_URL: `sqlite:${db}`, PORT: '0' })
    assert.equal(refused.code, 1, refused.stdout + refused.stderr)
    assert.match(refused.stderr, /is not the store \S+\.store-id says was created there \(store \d+\): it is store \d+, so another database was moved or copied over it; it is not served\./)
    assert.deepEqual(readFileSync(db), bytes, 'the refused start changed the file')
    rmSync(`${db}.store-id`)
    const again = await startServer(t, { DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'info' })
    assert.equal((await readyz(again)).status, 200)
    assert.equal((await fetch(`${again.url}/v1/pets`, { headers: otherAuth })).status, 200, 'the store that was written there serves')
    await stop(again)
  })

  it('a restart on a malformed store refuses to serve: it listens while the check runs, then exit 1, one line naming integrity_check, the file untouched', async (t) => {
    const { db, auth, server } = await setUp(t)
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: BODY })
      assert.equal(res.status, 201)
    }
    await stop(server)
    // Garbage over the pages after the first (the schema stays readable; the tables do not).
    const fd = openSync(db, 'r+')
    writeSync(fd, Buffer.alloc(4096 * 4, 0xa5), 0, 4096 * 4, 4096)
    closeSync(fd)
    const before = readFileSync(db)
    const restart = await runServerToExit({ DATABASE_URL: `sqlite:${db}`, PORT: '0' })
    assert.equal(restart.code, 1, restart.stdout + restart.stderr)
    assert.match(restart.stderr, /^petstore: cannot start: the SQLite database \S+ is malformed \(PRAGMA quick_check: [^\n]+\); it is not served\. Check it with: sqlite3 \S+ 'PRAGMA integrity_check', and restore it from a backup\n$/)
    // The check runs on a thread of its own while the server listens (/healthz 200, /readyz 503).
    assert.match(restart.stdout, /Server listening/)
    assert.deepEqual(readFileSync(db), before, 'nothing was written into the malformed file')
  })
})
