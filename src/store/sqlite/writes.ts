import type Database from 'better-sqlite3'
import { type CreateItem, type CreateOutcome, createOutcomes, idempotencyKeys, keyOf, planCreates } from '../creates.js'
import { type IdemRecord, type IdemRow, toIdemRecord } from '../rows.js'

/** The write transactions that go through the writer (a worker thread, or inline for :memory:). */
export interface SqliteWrites {
  /** Inserts the batch in one IMMEDIATE transaction (one fsync), idempotency records with their pets; outcomes in order. */
  createPets (items: CreateItem[]): CreateOutcome[]
  touchApiKeys (entries: Array<[number, string]>): void
  purgeIdempotencyKeys (beforeMs: number): number
}

export function prepareWrites (db: Database.Database): SqliteWrites {
  // run()'s lastInsertRowid is the new id (a bigint under safe integers): cheaper than RETURNING.
  const insertPet = db.prepare('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)')
  const findIdem = db.prepare(`SELECT i.fingerprint, i.created_at, p.id, p.name, p.category_id, p.status
    FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id WHERE i.api_key_id = ? AND i.key = ?`)
  const deleteIdem = db.prepare('DELETE FROM idempotency_keys WHERE api_key_id = ? AND key = ?')
  // created_at in ms since the epoch (migration 2).
  const insertIdem = db.prepare('INSERT INTO idempotency_keys (api_key_id, key, fingerprint, pet_id, created_at) VALUES (?, ?, ?, ?, ?)')
  const purge = db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?')
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')
  // The one writer SQLite allows, taken at BEGIN IMMEDIATE, is the lock the batch needs (see creates.ts).
  const createPets = db.transaction((items: CreateItem[]) => {
    const found = new Map<string, IdemRecord>()
    for (const idem of idempotencyKeys(items)) {
      const row = findIdem.get(idem.apiKeyId, idem.key) as IdemRow | undefined
      if (row !== undefined) found.set(keyOf(idem), toIdemRecord(row))
    }
    const plan = planCreates(items, found)
    for (const idem of plan.drop) deleteIdem.run(idem.apiKeyId, idem.key)
    const ids = plan.pets.map(p => insertPet.run(p.name, p.categoryId, p.status).lastInsertRowid as bigint)
    for (const { idem, pet } of plan.record) insertIdem.run(idem.apiKeyId, idem.key, idem.fingerprint, ids[pet], idem.now.getTime())
    return createOutcomes(plan, ids)
  })
  const touchApiKeys = db.transaction((entries: Array<[number, string]>) => {
    for (const [id, at] of entries) touch.run(at, id, at)
  })
  return {
    createPets: (items) => createPets.immediate(items),
    touchApiKeys: (entries) => { touchApiKeys.immediate(entries) },
    purgeIdempotencyKeys: (beforeMs) => purge.run(beforeMs).changes
  }
}
