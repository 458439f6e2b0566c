/*
 * Creating pets, once for both stores: the batch (group commit), the Idempotency-Key decision and
 * the result handed back. A store runs each batch in a transaction that keeps every other pet
 * insert out until it commits (SQLite: the one writer, BEGIN IMMEDIATE; PostgreSQL: the pet insert
 * lock), so a key looked up there cannot be claimed by anyone else before this batch commits. Inside
 * it the store looks up the batch's keys (idempotencyKeys), asks planCreates what to write, writes
 * it (drop, then insert the pets in order, then record), and answers createOutcomes.
 */
import type { NewPet, Pet } from '../schemas/pets.js'
import { GroupCommit, type GroupCommitOptions } from './group-commit.js'
import { type IdemRecord, storedPet } from './rows.js'
import type { IdempotencyKey, IdempotentCreateResult } from './store.js'

/** A create waiting for its batch: the pet, and its Idempotency-Key when the client sent one. */
export interface CreateItem { pet: NewPet, idem?: IdempotencyKey }

/** Per item: the new pet's id; the earlier pet when the key replays; null when the key was used with another body. */
export type CreateOutcome = bigint | Pet | null

/** How an item is answered: created (or replayed) from the pet at this index of CreatePlan.pets, an earlier pet, or null (mismatch). */
type Answer = { created: number } | { replayed: number } | Pet | null

/** What a batch writes, in this order, and how each item is answered. */
export interface CreatePlan {
  /** Expired records to remove (their keys are recorded again). */
  readonly drop: IdempotencyKey[]
  /** The pets to insert, in the batch's order (their ids are drawn ascending in this order). */
  readonly pets: NewPet[]
  /** The records to write: each key with the index in `pets` of the pet it created. */
  readonly record: Array<{ idem: IdempotencyKey, pet: number }>
  readonly answers: Answer[]
}

/** A key's name in the map of records found (planCreates): its API key and its value. */
export const keyOf = (idem: { apiKeyId: number, key: string }): string => `${idem.apiKeyId}:${idem.key}`

/** The distinct keys of a batch, which the store looks up before planCreates. */
export function idempotencyKeys (items: CreateItem[]): IdempotencyKey[] {
  const keys = new Map<string, IdempotencyKey>()
  for (const { idem } of items) if (idem !== undefined) keys.set(keyOf(idem), idem)
  return [...keys.values()]
}

/**
 * The batch, item by item in order, given the records (live or expired) found for its keys (by keyOf). A key
 * whose record is live answers from it (the same body replays the pet it created, another body is
 * a mismatch) and writes nothing; an expired record counts as absent and is replaced. Items without
 * a key just insert. An item sees the records of the items before it, so two items with one key in
 * a batch behave like two requests in a row.
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

/** Each item's outcome, once the plan's pets were inserted with these ids (in `pets` order). */
export function createOutcomes (plan: CreatePlan, ids: bigint[]): CreateOutcome[] {
  return plan.answers.map(a => {
    if (a === null) return null
    if ('created' in a) return ids[a.created]!
    if ('replayed' in a) return storedPet(ids[a.replayed]!, plan.pets[a.replayed]!)
    return a
  })
}

/**
 * The create half of a Store: submissions are group-committed through `commit` (one transaction
 * and one flush for every create that arrived meanwhile), and each caller gets its own result.
 */
export class PetCreates {
  private readonly batches: GroupCommit<CreateItem, CreateOutcome>

  constructor (commit: (items: CreateItem[]) => Promise<CreateOutcome[]>, options?: GroupCommitOptions) {
    this.batches = new GroupCommit(commit, options)
  }

  async create (pet: NewPet): Promise<Pet> {
    return storedPet(await this.batches.submit({ pet }) as bigint, pet)
  }

  async createIdempotent (pet: NewPet, idem: IdempotencyKey): Promise<IdempotentCreateResult> {
    const out = await this.batches.submit({ pet, idem })
    if (out === null) return { outcome: 'mismatch' }
    if (typeof out === 'bigint') return { outcome: 'created', pet: storedPet(out, pet) }
    return { outcome: 'replayed', pet: out }
  }

  /** Resolves once no batch is queued or committing. */
  async drain (): Promise<void> {
    await this.batches.drain()
  }
}
