/*
 * Creating pets, once for both stores. A store runs each batch in a transaction that keeps every
 * other pet insert out until it commits, so a key it looks up there cannot be claimed by anyone else
 * before the batch commits: look up (idempotencyKeys), plan (planCreates), write, answer (createOutcomes).
 */
import type { NewPet, Pet } from '../schemas/pets.js'
import { type IdemRecord, storedPet } from './rows.js'
import type { IdempotencyKey } from './store.js'

export interface CreateItem { pet: NewPet, idem?: IdempotencyKey }

/** Per item: the new id; the earlier pet on a replay; null on a mismatch. */
export type CreateOutcome = bigint | Pet | null

type Answer = { created: number } | { replayed: number } | Pet | null

/** Written in this order: drop, pets, record. */
export interface CreatePlan {
  /** Expired records, replaced below. */
  readonly drop: IdempotencyKey[]
  /** Ids are drawn ascending in this order. */
  readonly pets: NewPet[]
  /** Each key with the index in `pets` of the pet it created. */
  readonly record: Array<{ idem: IdempotencyKey, pet: number }>
  readonly answers: Answer[]
}

export const keyOf = (idem: { apiKeyId: number, key: string }): string => `${idem.apiKeyId}:${idem.key}`

export function idempotencyKeys (items: CreateItem[]): IdempotencyKey[] {
  const keys = new Map<string, IdempotencyKey>()
  for (const { idem } of items) if (idem !== undefined) keys.set(keyOf(idem), idem)
  return [...keys.values()]
}

/**
 * A live record answers and writes nothing; an expired one counts as absent and is replaced. An item
 * sees the records of the items before it, so two with one key behave like two requests in a row.
 */
export function planCreates (items: CreateItem[], found: ReadonlyMap<string, IdemRecord>): CreatePlan {
  const plan: CreatePlan = { drop: [], pets: [], record: [], answers: [] }
  const inBatch = new Map<string, { fingerprint: string, pet: number }>()
  for (const { pet, idem } of items) {
    if (idem === undefined) {
      plan.answers.push({ created: plan.pets.push(pet) - 1 })
      continue
    }
    const k = keyOf(idem)
    const earlier = inBatch.get(k)
    if (earlier !== undefined) {
      plan.answers.push(earlier.fingerprint === idem.fingerprint ? { replayed: earlier.pet } : null)
      continue
    }
    const record = found.get(k)
    if (record !== undefined && record.createdAt.getTime() >= idem.expiredBefore.getTime()) {
      plan.answers.push(record.fingerprint === idem.fingerprint ? record.pet : null)
      continue
    }
    if (record !== undefined) plan.drop.push(idem)
    const i = plan.pets.push(pet) - 1
    plan.record.push({ idem, pet: i })
    inBatch.set(k, { fingerprint: idem.fingerprint, pet: i })
    plan.answers.push({ created: i })
  }
  return plan
}

export function createOutcomes (plan: CreatePlan, ids: bigint[]): CreateOutcome[] {
  return plan.answers.map(a => {
    if (a === null) return null
    if ('created' in a) return ids[a.created]!
    if ('replayed' in a) return storedPet(ids[a.replayed]!, plan.pets[a.replayed]!)
    return a
  })
}
