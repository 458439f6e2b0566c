import assert from 'node:assert/strict'
import { closeSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { StoreOpeningError } from '../../../src/errors.js'
import { SqliteStore } from '../../../src/store/sqlite/index.js'
import { migrateSqlite, SQLITE_MIGRATIONS } from '../../../src/store/sqlite/migrations.js'
import { MalformedStoreError, StoreMissingError } from '../../../src/store/sqlite/start-checks.js'
import { isOpening } from '../../../src/store/store.js'
import { tempDir } from '../../helpers/app.js'
import { onCleanup } from '../../helpers/cleanup.js'
import { holdLock } from '../../helpers/sqlite-lock.js'

/*
 * A server start's SQLite store (SqliteStore.start, sqlite/opening.ts): quick_check on a thread of
 * its own, the store answering StoreOpeningError until the file passed and was migrated.
 */

const PET = { name: 'Rex', categoryId: 1n, status: 'available' } as const
const opts = (path: string) => ({ path, synchronous: 'FULL' as const })

/** A store file with a pet, its schema migrated up to `version`, closed. */
function makeFile (path: string, version = SQLITE_MIGRATIONS.length): void {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, version))
  db.prepare("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO pets (name, category_id, status) SELECT 'pet ' || i || ' ' || hex(randomblob(20)), i, 'available' FROM n").run()
  db.close()
}

/** Garbage over the root page of the pets table: the schema and the other tables stay readable. */
function breakPets (path: string): void {
  const db = new Database(path, { readonly: true })
  const { rootpage, size } = db.prepare("SELECT rootpage, (SELECT page_size FROM pragma_page_size) AS size FROM sqlite_schema WHERE name = 'pets'").get() as { rootpage: number, size: number }
  db.close()
  const fd = openSync(path, 'r+')
  writeSync(fd, Buffer.alloc(size, 0xa5), 0, size, (rootpage - 1) * size)
  closeSync(fd)
}

const versionsOf = (path: string): number[] => {
  const db = new Database(path, { readonly: true })
  try {
    return (db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>).map(r => r.version)
  } finally {
    db.close()
  }
}

describe('SqliteStore.start (a server start)', () => {
  it('over an existing file: answers StoreOpeningError until the check passed, then migrates and serves', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    makeFile(path, 3)
    const store = await SqliteStore.start(opts(path))
    onCleanup(t, async () => { await store.close() })
    assert.ok(isOpening(store), 'an existing file opens in the background')
    await assert.rejects(store.ping(), StoreOpeningError)
    await assert.rejects(store.getPet(1n), StoreOpeningError)
    await store.opened
    await store.ping()
    assert.equal((await store.getPet(1n))?.id, 1n)
    assert.deepEqual(versionsOf(path), SQLITE_MIGRATIONS.map(m => m.version), 'migrated once the check passed')
  })

  it('a new file or :memory: has nothing to check: the store is open at once', async (t) => {
    for (const path of [join(tempDir(t), 'new.db'), ':memory:']) {
      const store = await SqliteStore.start(opts(path))
      assert.equal(isOpening(store), false)
      await store.createPet(PET)
      await store.close()
    }
  })

  it('a malformed file: opened rejects with the same MalformedStoreError as a CLI open, and no migration is written into it', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    makeFile(path, 3)
    breakPets(path)
    const before = readFileSync(path)
    const cli = await SqliteStore.open(opts(path)).then(() => undefined, (err: unknown) => err)
    assert.ok(cli instanceof MalformedStoreError, String(cli))
    const store = await SqliteStore.start(opts(path))
    assert.ok(isOpening(store))
    await assert.rejects(store.opened, (err: unknown) => err instanceof MalformedStoreError && err.message === cli.message)
    await assert.rejects(store.ping(), StoreOpeningError)
    await store.close()
    assert.deepEqual(readFileSync(path), before, 'nothing was written into the file')
  })

  it('a file that is no database: the same MalformedStoreError as a CLI open', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    writeFileSync(path, 'not a database, but long enough to have a header: '.repeat(100))
    const cli = await SqliteStore.open(opts(path)).then(() => undefined, (err: unknown) => err)
    assert.ok(cli instanceof MalformedStoreError, String(cli))
    const store = await SqliteStore.start(opts(path))
    assert.ok(isOpening(store))
    await assert.rejects(store.opened, (err: unknown) => err instanceof MalformedStoreError && err.message === cli.message)
    await store.close()
  })

  it('closed while the check waits for a lock held elsewhere: close returns, opened rejects with StoreOpeningError, nothing is migrated', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    makeFile(path, 3)
    const release = holdLock(t, path)
    const store = await SqliteStore.start(opts(path))
    assert.ok(isOpening(store))
    await store.close()
    await assert.rejects(store.opened, StoreOpeningError)
    release()
    assert.deepEqual(versionsOf(path), [1, 2, 3])
  })

  it('a file replaced while it is checked is not opened: StoreMissingError, the file now at the path left as it is', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'petstore.db')
    makeFile(path)
    const other = join(dir, 'other.db')
    makeFile(other, 3)
    const otherBytes = readFileSync(other)
    const release = holdLock(t, path)
    const store = await SqliteStore.start(opts(path))
    assert.ok(isOpening(store))
    // Renames open no descriptor of the file, so the lock holds (see holdLock).
    renameSync(path, join(dir, 'moved.db'))
    renameSync(other, path)
    release()
    await assert.rejects(store.opened, (err: unknown) => err instanceof StoreMissingError && /was removed or replaced while it was checked at start/.test(err.message))
    await store.close()
    assert.deepEqual(readFileSync(path), otherBytes, 'neither migrated nor opened')
  })

  it('the check waits for a lock held elsewhere, then passes once it is released', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    makeFile(path)
    const release = holdLock(t, path)
    const store = await SqliteStore.start(opts(path))
    onCleanup(t, async () => { await store.close() })
    assert.ok(isOpening(store))
    await assert.rejects(store.ping(), StoreOpeningError)
    release()
    await store.opened
    assert.equal((await store.getPet(2000n))?.id, 2000n)
  })
})
