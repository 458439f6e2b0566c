// requires: chattr
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import Database from 'better-sqlite3'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore } from '../../src/store/index.js'
import { errorCode } from '../helpers/property.js'
import { onCleanup } from '../helpers/cleanup.js'

/*
 * Real faults, no mocks: a disk that fills up (a tiny tmpfs mounted for the test; CI runs as root)
 * and a store file that turns read-only under the running server (chattr +i: even root's writes on
 * already-open descriptors then fail with EPERM).
 */
/** A scratch directory with one teardown, run in order: close the app, lift the fault, unmount, remove. */
function scratch (t: TestContext): { dir: string, undo: Array<() => unknown> } {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-fault-'))
  const undo: Array<() => unknown> = []
  onCleanup(t, async () => {
    for (const fn of undo.reverse()) await fn()
    rmSync(dir, { recursive: true, force: true })
  })
  return { dir, undo }
}

async function appAt (undo: Array<() => unknown>, dbPath: string) {
  // Overload shedding off (as in buildTestApp): a loaded test machine's 503 would hide the store's own answer.
  const config = loadConfig({ DATABASE_URL: `sqlite:${dbPath}`, EVENT_LOOP_MAX_DELAY_MS: '0' })
  const store = await openStore(config)
  const app = await buildApp({ config, store })
  undo.push(() => app.close())
  const { key } = await createApiKey(store, 'faults')
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  let n = 0
  const create = () => app.inject({ method: 'POST', url: '/v1/pets', headers, payload: JSON.stringify({ name: `pet-${n++}-${'x'.repeat(200)}`, categoryId: n }) })
  const list = () => app.inject({ url: '/v1/pets?limit=1', headers })
  return { app, store, create, list }
}

function integrity (dbPath: string): { ok: string, names: string[] } {
  const db = new Database(dbPath, { readonly: true })
  try {
    return { ok: String(db.pragma('integrity_check', { simple: true })), names: (db.prepare('SELECT name FROM pets').all() as Array<{ name: string }>).map(r => r.name) }
  } finally {
    db.close()
  }
}

describe('store faults → 503 Error, nothing corrupted, recovery when the fault clears', () => {
  it('disk full (a 3 MiB tmpfs filled up)', async (t) => {
    const { dir, undo } = scratch(t)
    const mnt = join(dir, 'tiny')
    mkdirSync(mnt)
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', mnt])
    undo.push(() => { execFileSync('umount', ['-l', mnt]) })
    const dbPath = join(mnt, 'full.db')
    const s = await appAt(undo, dbPath)
    const acknowledged: string[] = []
    const ack = (res: { statusCode: number, body: string }) => { if (res.statusCode === 201) acknowledged.push(JSON.parse(res.body).name) }
    for (let i = 0; i < 5; i++) ack(await s.create())

    // Fill the file system to the last byte.
    const filler = join(mnt, 'filler')
    const fd = openSync(filler, 'w')
    try {
      const chunk = Buffer.alloc(64 * 1024)
      for (;;) writeSync(fd, chunk)
    } catch (err) {
      assert.equal((err as { code?: string }).code, 'ENOSPC')
    } finally {
      closeSync(fd)
    }

    const statuses = new Map<number, number>()
    let refused = 0
    for (let i = 0; i < 300 && refused < 20; i++) {
      const res = await s.create()
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      assert.ok(res.statusCode === 201 || res.statusCode === 503, `${res.statusCode} ${res.body}`)
      if (res.statusCode === 503) {
        refused++
        assert.equal(errorCode(res), 'service_unavailable')
        assert.equal(res.headers['retry-after'], '1')
      }
      ack(res)
    }
    assert.ok(refused > 0, 'a full disk refused writes')
    assert.equal((await s.list()).statusCode, 200, 'reads go on while the disk is full')
    assert.equal(integrity(dbPath).ok, 'ok')

    rmSync(filler)
    const after = await s.create()
    assert.equal(after.statusCode, 201, after.body)
    ack(after)
    const { ok, names } = integrity(dbPath)
    assert.equal(ok, 'ok')
    for (const name of acknowledged) assert.ok(names.includes(name), `acknowledged ${name.slice(0, 12)} missing`)
    assert.equal(names.length, acknowledged.length, 'nothing refused was stored')
    t.diagnostic(`disk full: statuses while full ${JSON.stringify(Object.fromEntries(statuses))}; recovered; ${acknowledged.length} acknowledged all present; integrity ok`)
  })

  it('store file turned read-only under the running server (chattr +i)', async (t) => {
    const { dir, undo } = scratch(t)
    const dbPath = join(dir, 'ro.db')
    const s = await appAt(undo, dbPath)
    const acknowledged: string[] = []
    for (let i = 0; i < 3; i++) {
      const res = await s.create()
      assert.equal(res.statusCode, 201)
      acknowledged.push(JSON.parse(res.body).name)
    }
    const files = [dbPath, `${dbPath}-wal`]
    undo.push(() => { spawnSync('chattr', ['-i', ...files]) })
    execFileSync('chattr', ['+i', ...files])

    for (let i = 0; i < 5; i++) {
      const res = await s.create()
      assert.equal(res.statusCode, 503, res.body)
      assert.equal(errorCode(res), 'service_unavailable')
    }
    assert.equal((await s.list()).statusCode, 200, 'reads go on')

    execFileSync('chattr', ['-i', ...files])
    const after = await s.create()
    assert.equal(after.statusCode, 201, after.body)
    acknowledged.push(JSON.parse(after.body).name)
    const { ok, names } = integrity(dbPath)
    assert.equal(ok, 'ok')
    assert.deepEqual(names, acknowledged)
    t.diagnostic('read-only: 5 of 5 creates answered 503 service_unavailable; recovered after chattr -i; integrity ok')
  })
})
