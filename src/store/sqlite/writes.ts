import type Database from 'better-sqlite3'
import type { NewPet } from '../../schemas/pets.js'

/** The write transactions that go through the writer (a worker thread, or inline for :memory:). */
export interface SqliteWrites {
  /** Inserts the batch in one transaction (one fsync); returns the assigned ids in order. */
  createPets (pets: NewPet[]): bigint[]
  touchApiKeys (entries: Array<[number, string]>): void
}

export function prepareWrites (db: Database.Database): SqliteWrites {
  const insertPet = db.prepare('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING id')
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')
  const createPets = db.transaction((pets: NewPet[]) => {
    const ids: bigint[] = new Array(pets.length)
    for (let i = 0; i < pets.length; i++) {
      const p = pets[i]!
      ids[i] = (insertPet.get(p.name, p.categoryId, p.status) as { id: bigint }).id
    }
    return ids
  })
  const touchApiKeys = db.transaction((entries: Array<[number, string]>) => {
    for (const [id, at] of entries) touch.run(at, id, at)
  })
  return {
    createPets: (pets) => createPets.immediate(pets),
    touchApiKeys: (entries) => { touchApiKeys.immediate(entries) }
  }
}
