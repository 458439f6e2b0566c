import assert from 'node:assert/strict'
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import Database from 'better-sqlite3'
import { OutcomeUnknownError, StoreUnavailableError } from '../../../src/errors.js'
import { SqliteStore } from '../../../src/store/sqlite/index.js'
import { tempDir } from '../../helpers/app.js'
import { onCleanup } from '../../helpers/cleanup.js'

/*
 * The SQLite store commits creates on the event loop at synchronous=NORMAL and flushes the WAL with
 * fdatasync on libuv's pool before answering (src/store/sqlite/wal-flush.ts). These tests hold the
 * flush back (or fail it) by replacing fs.fdatasync, which the store's module reads through its live
 * ESM binding (syncBuiltinESMExports), and look at what the store shows meanwhile.
 */
type Callback = (err: NodeJS.ErrnoException | null) => void

/** Replaces fs.fdatasync for the test: every call is handed to `hook` with the real one. */
function interceptFdatasync (t: TestContext, hook: (fd: number, cb: Callback, real: typeof fs.fdatasync) => void): void {
  const real = fs.fdatasync
  fs.fdatasync = ((fd: number, cb: Callback) => { hook(fd, cb, real) }) as typeof fs.fdatasync
  syncBuiltinESMExports()
  onCleanup(t, () => {
    fs.fdatasync = real
    syncBuiltinESMExports()
  })
}

const pet = (name: string) => ({ name, categoryId: 1n, status: 'available' as const })

async function openStore (t: TestContext): Promise<{ store: SqliteStore, path: string }> {
  const path = join(tempDir(t), 'p.db')
  const store = await SqliteStore.open({ path, synchronous: 'FULL' })
  onCleanup(t, async () => { await store.close() })
  return { store, path }
}

describe('SQLite creates: committed on the event loop, answered after the WAL flush', () => {
  it('hides a committed batch from getPet and listPets until its flush completes, then shows it', async (t) => {
    const { store, path } = await openStore(t)
    const before = await store.createPet(pet('before'))
    const held: Array<() => void> = []
    interceptFdatasync(t, (fd, cb, real) => { held.push(() => real(fd, cb)) })

    let answered = false
    const creating = store.createPet(pet('held')).then(p => { answered = true; return p })
    // The commit is on the disk's way: another connection already sees the row.
    const other = new Database(path, { readonly: true })
    onCleanup(t, () => other.close())
    other.defaultSafeIntegers(true)
    for (let i = 0; i < 1000 && held.length === 0; i++) await new Promise(resolve => setImmediate(resolve))
    assert.equal(held.length, 1, 'no flush was started for the batch')
    const row = other.prepare('SELECT id FROM pets WHERE name = ?').get('held') as { id: bigint } | undefined
    assert.ok(row !== undefined, 'the batch was not committed before its flush')

    // Until the flush completes: not answered, not shown.
    assert.equal(answered, false)
    assert.equal((await store.getPet(row.id)), undefined)
    assert.deepEqual((await store.listPets({ afterId: null, limit: 10, status: undefined })).map(p => p.name), ['before'])
    assert.deepEqual((await store.listPets({ afterId: null, limit: 10, status: 'available' })).map(p => p.name), ['before'])
    assert.equal((await store.getPet(before.id))?.name, 'before')
    // A page spanning the batch's id may still change: not settled (the read cache does not keep it).
    assert.equal(store.pageIsFinal(null, row.id + 5n), false)
    assert.equal(store.pageIsFinal(row.id, row.id + 5n), true)
    assert.equal(store.pageIsFinal(null, before.id), true)

    held.shift()!()
    const created = await creating
    assert.equal(created.id, row.id)
    assert.equal((await store.getPet(row.id))?.name, 'held')
    assert.deepEqual((await store.listPets({ afterId: null, limit: 10, status: undefined })).map(p => p.name), ['before', 'held'])
    assert.equal(store.pageIsFinal(null, row.id + 5n), true)
  })

  it('a failed flush answers its batch 503 outcome unknown, keeps the batch hidden, and refuses every later write and readiness', async (t) => {
    const { store, path } = await openStore(t)
    await store.createPet(pet('before'))
    interceptFdatasync(t, (_fd, cb) => { setImmediate(() => cb(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO', errno: -5, syscall: 'fdatasync' }))) })

    // Committed but not known to be on the disk: its outcome is unknown (a restart may recover it).
    await assert.rejects(store.createPet(pet('lost')), (err: unknown) => err instanceof OutcomeUnknownError && /flush its write-ahead log/.test(err.message))
    const other = new Database(path, { readonly: true })
    onCleanup(t, () => other.close())
    other.defaultSafeIntegers(true)
    const row = other.prepare('SELECT id FROM pets WHERE name = ?').get('lost') as { id: bigint }
    assert.equal((await store.getPet(row.id)), undefined, 'a pet whose flush failed was shown')
    assert.deepEqual((await store.listPets({ afterId: null, limit: 10, status: undefined })).map(p => p.name), ['before'])

    // Nothing more is committed: the next create is refused before its transaction.
    await assert.rejects(store.createPet(pet('after')), (err: unknown) => err instanceof StoreUnavailableError && !(err instanceof OutcomeUnknownError))
    assert.equal((other.prepare('SELECT count(*) AS n FROM pets WHERE name = ?').get('after') as { n: bigint }).n, 0n)
    await assert.rejects(store.ping(), StoreUnavailableError)
  })

  it('waits out another connection\'s write lock without blocking the event loop, then commits', async (t) => {
    const { store, path } = await openStore(t)
    const first = await store.createPet(pet('before'))
    const other = new Database(path)
    onCleanup(t, () => { if (other.inTransaction) other.exec('ROLLBACK'); other.close() })
    other.exec('BEGIN IMMEDIATE')
    let answered = 0
    const creating = store.createPet(pet('waited')).then(p => { answered++; return p })
    const keying = store.createApiKey({ name: 'waited', hash: 'a'.repeat(64), createdAt: new Date() }).then(k => { answered++; return k })
    // Reads are not kept out by the lock.
    assert.equal((await store.getPet(first.id))?.name, 'before')
    // The event loop keeps turning while the batch waits for the lock.
    const t0 = Date.now()
    let turns = 0
    while (Date.now() - t0 < 60) {
      await new Promise(resolve => setTimeout(resolve, 1))
      turns++
    }
    assert.ok(turns > 10, `the event loop turned ${turns} times in 60 ms`)
    assert.equal(answered, 0)
    other.exec('COMMIT')
    assert.equal((await creating).name, 'waited')
    assert.equal((await keying).name, 'waited')
  })

  it('closes with the WAL checkpointed into the database file and removed', async (t) => {
    const path = join(tempDir(t), 'p.db')
    const store = await SqliteStore.open({ path, synchronous: 'FULL' })
    for (let i = 0; i < 5; i++) await store.createPet(pet(`p${i}`))
    await store.close()
    assert.equal(fs.existsSync(`${path}-wal`), false)
    const db = new Database(path, { readonly: true })
    onCleanup(t, () => db.close())
    assert.equal((db.prepare('SELECT count(*) AS n FROM pets').get() as { n: number }).n, 5)
  })

  it('keeps taking creates while another connection holds an old snapshot across a checkpoint', async (t) => {
    const { store, path } = await openStore(t)
    // The background thread up first (readiness waits for it), so the checkpoint runs among the creates.
    store.startWriter()
    await store.ping()
    await store.createPet(pet('first'))
    const reader = new Database(path, { readonly: true })
    onCleanup(t, () => { if (reader.inTransaction) reader.exec('COMMIT'); reader.close() })
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM pets').get()
    // More commits than come between two checkpoints: one checkpoint at least runs while the
    // reader's snapshot is older than the WAL's end; no create may wait on it until refused.
    const outcomes = await Promise.allSettled(Array.from({ length: 400 }, async (_, i) => {
      await new Promise(resolve => setTimeout(resolve, i * 6))
      return await store.createPet(pet(`p${i}`))
    }))
    const refused = outcomes.filter(o => o.status === 'rejected')
    assert.equal(refused.length, 0, String((refused[0] as PromiseRejectedResult | undefined)?.reason))
    reader.exec('COMMIT')
    assert.equal((await store.listPets({ afterId: null, limit: 100, status: undefined })).length, 100)
  })

  it('opens, flushes and closes a database named through a symbolic link', async (t) => {
    const dir = tempDir(t)
    fs.mkdirSync(join(dir, 'real'))
    fs.mkdirSync(join(dir, 'links'))
    const target = join(dir, 'real', 'p.db')
    const store0 = await SqliteStore.open({ path: target, synchronous: 'FULL' })
    await store0.close()
    const link = join(dir, 'links', 'p.db')
    fs.symlinkSync(target, link)
    const store = await SqliteStore.open({ path: link, synchronous: 'FULL' })
    const created = await store.createPet(pet('through a link'))
    assert.equal((await store.getPet(created.id))?.name, 'through a link')
    await store.close()
    assert.equal(fs.existsSync(`${link}-wal`), false)
    assert.equal(fs.existsSync(`${target}-wal`), false)
  })
})
