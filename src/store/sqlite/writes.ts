import type Database from 'better-sqlite3'
import { type CreateItem, type CreateOutcome, createOutcomes, idempotencyKeys, keyOf, planCreates } from '../creates.js'
import type { NewPet } from '../../schemas/pets.js'
import { type IdemRecord, type IdemRow, toIdemRecord } from '../rows.js'

export type SqliteWrites = ReturnType<typeof prepareWrites>

/** A write nobody waits for: sent to the background thread (writer-worker.ts), or run here without one. */
export type BackgroundWrite =
  | { op: 'touchApiKeys', entries: Array<[number, string]> }
  | { op: 'purgeIdempotencyKeys', beforeMs: number }

export function prepareWrites (db: Database.Database) {
  const insertPets = multiRowInsert(db)
  const findIdem = db.prepare(`SELECT i.fingerprint, i.created_at, p.id, p.name, p.category_id, p.status
    FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id WHERE i.api_key_id = ? AND i.key = ?`)
  const deleteIdem = db.prepare('DELETE FROM idempotency_keys WHERE api_key_id = ? AND key = ?')
  const insertIdem = db.prepare('INSERT INTO idempotency_keys (api_key_id, key, fingerprint, pet_id, created_at) VALUES (?, ?, ?, ?, ?)')
  const purge = db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?')
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')
  // BEGIN IMMEDIATE takes the one writer: the lock the batch needs (see creates.ts).
  const createPets = db.transaction((items: CreateItem[]) => {
    const found = new Map<string, IdemRecord>()
    for (const idem of idempotencyKeys(items)) {
      const row = findIdem.get(idem.apiKeyId, idem.key) as IdemRow | undefined
      if (row !== undefined) found.set(keyOf(idem), toIdemRecord(row))
    }
    const plan = planCreates(items, found)
    for (const idem of plan.drop) deleteIdem.run(idem.apiKeyId, idem.key)
    const ids = insertPets(plan.pets)
    for (const { idem, pet } of plan.record) insertIdem.run(idem.apiKeyId, idem.key, idem.fingerprint, ids[pet], idem.now.getTime())
    return createOutcomes(plan, ids)
  })
  const touchApiKeys = db.transaction((entries: Array<[number, string]>) => {
    for (const [id, at] of entries) touch.run(at, id, at)
  })
  return {
    createPets: (items: CreateItem[]): CreateOutcome[] => createPets.immediate(items),
    /** purgeIdempotencyKeys returns how many keys it removed. */
    background: (w: BackgroundWrite) => w.op === 'touchApiKeys' ? touchApiKeys.immediate(w.entries) : purge.run(w.beforeMs).changes
  }
}

const CHUNK = 64

/**
 * A multi-row INSERT per chunk. SQLite inserts a VALUES list in order and the one writer draws each
 * AUTOINCREMENT id as the previous plus one, so a chunk's ids end at lastInsertRowid (RETURNING's
 * row order is unspecified).
 */
function multiRowInsert (db: Database.Database): (pets: NewPet[]) => bigint[] {
  // Chunks of CHUNK rows, then of each half down to one.
  const statements = new Map<number, Database.Statement>()
  for (let rows = CHUNK; rows >= 1; rows >>= 1) {
    statements.set(rows, db.prepare(`INSERT INTO pets (name, category_id, status) VALUES ${Array(rows).fill('(?, ?, ?)').join(', ')}`))
  }
  return (pets) => {
    const ids: bigint[] = []
    let at = 0
    while (at < pets.length) {
      let rows = CHUNK
      while (rows > pets.length - at) rows >>= 1
      const values: unknown[] = []
      for (let i = at; i < at + rows; i++) values.push(pets[i]!.name, pets[i]!.categoryId, pets[i]!.status)
      const { changes, lastInsertRowid } = statements.get(rows)!.run(values)
      if (changes !== rows) throw new Error(`inserted ${changes} pets of ${rows}`)
      for (let i = rows - 1; i >= 0; i--) ids.push((lastInsertRowid as bigint) - BigInt(i))
      at += rows
    }
    return ids
  }
}
