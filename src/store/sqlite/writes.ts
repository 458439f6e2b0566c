import type Database from 'better-sqlite3'
import type { NewPet, Pet, PetStatus } from '../../schemas/pets.js'

/** A create as sent to the writer: the pet, and its Idempotency-Key record when the client sent one. */
export interface CreateItem {
  pet: NewPet
  idem?: { apiKeyId: number, key: string, fingerprint: string, nowMs: number, expiredBeforeMs: number }
}

/** Per item: the new pet's id; the earlier pet when the key replays; null when the key was used with another body. */
export type CreateOutcome = bigint | Pet | null

/** The write transactions that go through the writer (a worker thread, or inline for :memory:). */
export interface SqliteWrites {
  /** Inserts the batch in one transaction (one fsync), idempotency records with their pets; outcomes in order. */
  createPets (items: CreateItem[]): CreateOutcome[]
  touchApiKeys (entries: Array<[number, string]>): void
  purgeIdempotencyKeys (beforeMs: number): number
}

interface IdemRow { fingerprint: string, created_at: bigint, id: bigint, name: string, category_id: bigint, status: PetStatus }

export function prepareWrites (db: Database.Database): SqliteWrites {
  const insertPet = db.prepare('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING id')
  const findIdem = db.prepare(`SELECT i.fingerprint, i.created_at, p.id, p.name, p.category_id, p.status
    FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id WHERE i.api_key_id = ? AND i.key = ?`)
  const deleteIdem = db.prepare('DELETE FROM idempotency_keys WHERE api_key_id = ? AND key = ?')
  const insertIdem = db.prepare('INSERT INTO idempotency_keys (api_key_id, key, fingerprint, pet_id, created_at) VALUES (?, ?, ?, ?, ?)')
  const purge = db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?')
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')
  const createPets = db.transaction((items: CreateItem[]) => {
    const out: CreateOutcome[] = new Array(items.length)
    for (let i = 0; i < items.length; i++) {
      const { pet: p, idem } = items[i]!
      if (idem !== undefined) {
        const row = findIdem.get(idem.apiKeyId, idem.key) as IdemRow | undefined
        if (row !== undefined && Number(row.created_at) >= idem.expiredBeforeMs) {
          out[i] = row.fingerprint === idem.fingerprint
            ? { id: row.id, name: row.name, categoryId: row.category_id, status: row.status }
            : null
          continue
        }
        if (row !== undefined) deleteIdem.run(idem.apiKeyId, idem.key)
      }
      const id = (insertPet.get(p.name, p.categoryId, p.status) as { id: bigint }).id
      if (idem !== undefined) insertIdem.run(idem.apiKeyId, idem.key, idem.fingerprint, id, idem.nowMs)
      out[i] = id
    }
    return out
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
