import assert from 'node:assert/strict'
import { closeSync, existsSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import Database from 'better-sqlite3'
import { StoreGoneError } from '../../../src/errors.js'
import { SqliteStore } from '../../../src/store/sqlite/index.js'
import { markerPath, MalformedStoreError, StoreMissingError } from '../../../src/store/sqlite/start-checks.js'
import { StoreFile } from '../../../src/store/sqlite/store-file.js'
import { tempDir } from '../../helpers/app.js'
import { onCleanup } from '../../helpers/cleanup.js'

const PET = { name: 'Rex', categoryId: 1n, status: 'available' } as const

async function openStore (path: string): Promise<SqliteStore> {
  return await SqliteStore.open({ path, synchronous: 'FULL' })
}

/** A closed store with a pet and a key, at `path`. */
async function makeStore (path: string): Promise<void> {
  const store = await openStore(path)
  await store.createPet(PET)
  await store.close()
}

function storeIdOf (path: string): number {
  const db = new Database(path, { readonly: true })
  try {
    return Number(db.pragma('application_id', { simple: true }))
  } finally {
    db.close()
  }
}

/** Opens a store and records the operator lines it reports. */
async function watched (t: TestContext, path: string): Promise<{ store: SqliteStore, lines: string[] }> {
  const store = await openStore(path)
  const lines: string[] = []
  store.onGone((line) => lines.push(line))
  onCleanup(t, async () => { await store.close() })
  return { store, lines }
}

describe('StoreFile: the identity of the file the store opened', () => {
  it('is the same file while nothing happens to it, and says removed, replaced or overwritten when something does', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'petstore.db')
    const other = join(dir, 'other.db')
    await makeStore(path)
    await makeStore(other)
    const id = storeIdOf(path)
    assert.notEqual(id, 0)
    assert.notEqual(storeIdOf(other), id, 'every store has its own id')

    const check = (withWal = false) => {
      const file = StoreFile.open(path, id, withWal)
      return { file, found: () => file.check() }
    }

    // Unchanged: nothing found, however often it looks.
    const a = check()
    assert.equal(a.found(), undefined)
    assert.equal(a.found(), undefined)
    // Unlinked: the descriptor still reads the old file, the path has none.
    renameSync(path, `${path}.away`)
    assert.equal(a.found()?.reason, 'removed')
    renameSync(`${path}.away`, path)
    assert.equal(a.found(), undefined, 'moved back: the same file again')
    a.file.close()

    // Replaced by another file (mv over it): another inode at the path.
    const b = check()
    writeFileSync(`${path}.copy`, readFileSync(path))
    renameSync(`${path}.copy`, path)
    const replaced = b.found()
    assert.equal(replaced?.reason, 'replaced')
    assert.match(replaced!.what, /is another file now/)
    b.file.close()

    // Overwritten in place with another store (same inode, other header).
    const c = check()
    assert.equal(c.found(), undefined)
    const fd = openSync(path, 'r+')
    writeSync(fd, readFileSync(other), 0, undefined, 0)
    closeSync(fd)
    const overwritten = c.found()
    assert.equal(overwritten?.reason, 'overwritten')
    assert.match(overwritten!.what, new RegExp(`this is store ${id}`))
    c.file.close()

    // Truncated (what `cat x > file` does first): no header at all.
    const d = StoreFile.open(path, storeIdOf(path), false)
    closeSync(openSync(path, 'w'))
    assert.equal(d.check()?.reason, 'overwritten')
    d.close()
  })

  it('watches the write-ahead log too: removed alone, it is found', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    const { store } = await watched(t, path)
    await store.createPet(PET)
    unlinkSync(`${path}-wal`)
    await assert.rejects(store.createPet(PET), (err: unknown) => err instanceof StoreGoneError && err.reason === 'removed')
  })
})

describe('a SQLite store whose file is gone from under it', () => {
  it('acknowledges no create once the file is removed, says so once (path, cause, what to do), and fails readiness with the cause', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    const { store, lines } = await watched(t, path)
    const acknowledged = await store.createPet(PET)
    await store.ping()
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`)
    await assert.rejects(store.createPet(PET), (err: unknown) => err instanceof StoreGoneError && err.reason === 'removed' && /removed/.test(err.message))
    await assert.rejects(store.createPet(PET), StoreGoneError)
    await assert.rejects(store.ping(), (err: unknown) => err instanceof StoreGoneError && err.reason === 'removed')
    assert.equal(lines.filter(l => l.startsWith('SQLite store gone')).length, 1, 'one line, however many requests are refused')
    assert.match(lines[0]!, new RegExp(`${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} no longer exists`))
    assert.match(lines[0]!, /put the right database file back/)
    await assert.rejects(store.createPet(PET), (err: Error) => !err.message.includes(path), 'the client never sees a path')
    // The store as it had it, copied beside the path once it is gone: every pet it acknowledged.
    await store.close()
    assert.match(lines[1]!, /^SQLite store copy written: /)
    const copies = readdirSync(dirname(path)).filter(f => /^petstore\.db\.gone-/.test(f))
    assert.equal(copies.length, 1, copies.join(' '))
    const copy = new Database(join(dirname(path), copies[0]!), { readonly: true })
    // The acknowledged pet; the refused batch that found the change had reached the old file too.
    assert.deepEqual(copy.prepare('SELECT id FROM pets ORDER BY id').pluck().all(), [acknowledged.id, acknowledged.id + 1n].map(Number))
    copy.close()
    // A listener added later still hears of it.
    const late: string[] = []
    store.onGone((line) => late.push(line))
    assert.deepEqual(late, lines.slice(0, 1))
  })

  it('replaced (mv over it): moves its WAL away from the path, so the file there now is never given this log', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'petstore.db')
    const { store, lines } = await watched(t, path)
    await store.createPet(PET)
    const backup = join(dir, 'backup.db')
    await store.createPet(PET)
    writeFileSync(backup, readFileSync(path))
    renameSync(backup, path)
    const before = readFileSync(path)
    await assert.rejects(store.createPet(PET), (err: unknown) => err instanceof StoreGoneError && err.reason === 'replaced')
    assert.equal(existsSync(`${path}-wal`), false, 'no WAL left at the path')
    const aside = readdirSync(dir).filter(f => /^petstore\.db-wal\.gone-/.test(f))
    assert.equal(aside.length, 1, readdirSync(dir).join(' '))
    assert.match(lines[0]!, /write-ahead log was moved to/)
    await store.close()
    assert.deepEqual(readFileSync(path), before, 'the file at the path is untouched by the close')
  })

  it('overwritten in place: refuses creates, and its close copies nothing into the file that is there now', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'petstore.db')
    const other = join(dir, 'other.db')
    await makeStore(other)
    const { store } = await watched(t, path)
    for (let i = 0; i < 5; i++) await store.createPet(PET)
    const fd = openSync(path, 'r+')
    const bytes = readFileSync(other)
    writeSync(fd, bytes, 0, undefined, 0)
    closeSync(fd)
    const after = readFileSync(path)
    await assert.rejects(store.createPet(PET), (err: unknown) => err instanceof StoreGoneError && err.reason === 'overwritten')
    await store.close()
    assert.deepEqual(readFileSync(path), after, 'no checkpoint wrote into the overwritten file')
  })
})

describe('a SQLite store at start', () => {
  it('creates the database, its WAL, its shared memory and its marker readable by this user only (0600)', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    const previous = process.umask(0o022)
    try {
      const { store } = await watched(t, path)
      await store.createPet(PET)
      for (const file of [path, `${path}-wal`, `${path}-shm`, markerPath(path)]) {
        assert.equal((statSync(file).mode & 0o777).toString(8), '600', file)
      }
    } finally {
      process.umask(previous)
    }
  })

  it('refuses to make a new empty store where its marker says one was, or beside a leftover WAL', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'petstore.db')
    await makeStore(path)
    const id = storeIdOf(path)
    assert.equal(readFileSync(markerPath(path), 'utf8'), `${id}\n`)
    rmSync(path)
    await assert.rejects(openStore(path), (err: unknown) => err instanceof StoreMissingError &&
      err.message.includes(`store ${id} was created there`) && err.message.includes(`delete ${markerPath(path)}`))
    assert.equal(existsSync(path), false, 'nothing was created')
    // An empty file (truncated) is no store either.
    writeFileSync(path, '')
    await assert.rejects(openStore(path), StoreMissingError)
    rmSync(path)
    assert.throws(() => SqliteStore.migrate({ path, synchronous: 'FULL' }), StoreMissingError)

    // The way out the line names: without the marker, a new store (with a new id).
    rmSync(markerPath(path))
    writeFileSync(`${path}-wal`, 'left over')
    await assert.rejects(openStore(path), (err: unknown) => err instanceof StoreMissingError && /write-ahead log/.test(err.message))
    rmSync(`${path}-wal`)
    await makeStore(path)
    assert.notEqual(storeIdOf(path), id)
  })

  it('refuses a malformed database with one line that names integrity_check', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    await makeStore(path)
    const db = new Database(path)
    db.prepare("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO pets (name, category_id, status) SELECT 'pet ' || i || ' ' || hex(randomblob(20)), i, 'available' FROM n").run()
    db.close()
    // Garbage over the pages after the first two: the tables' b-trees.
    const pageSize = 4096
    const fd = openSync(path, 'r+')
    writeSync(fd, Buffer.alloc(pageSize * 4, 0xa5), 0, pageSize * 4, pageSize * 2)
    closeSync(fd)
    await assert.rejects(openStore(path), (err: unknown) => err instanceof MalformedStoreError &&
      /is malformed \(PRAGMA quick_check: /.test(err.message) && /PRAGMA integrity_check/.test(err.message) && !err.message.includes('\n'))
  })
})
