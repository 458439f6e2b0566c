/*
 * Creating pets, once for both stores: the batch (group commit), the Idempotency-Key decision and
 * the result handed back. A store supplies only its statements (CreateStatements) and the
 * transaction they run in, which must keep every other pet insert out until it commits (SQLite: the
 * one writer, BEGIN IMMEDIATE; PostgreSQL: the pet insert lock), so a key looked up there cannot be
 * claimed by anyone else before this batch commits.
 *
 * The algorithm is a generator of statements, so the same code drives SQLite's synchronous
 * transaction (better-sqlite3 refuses an async function there) and PostgreSQL's asynchronous one.
 */
import type { NewPet, Pet } from '../schemas/pets.js'
import { GroupCommit } from './group-commit.js'
import { type IdemRecord, storedPet } from './rows.js'
import type { IdempotencyKey, IdempotentCreateResult } from './store.js'

/** A create waiting for its batch: the pet, and its Idempotency-Key when the client sent one. */
export interface CreateItem { pet: NewPet, idem?: IdempotencyKey }

/** Per item: the new pet's id; the earlier pet when the key replays; null when the key was used with another body. */
export type CreateOutcome = bigint | Pet | null

/** One store's statements for a batch of creates, run inside the batch's transaction. */
export interface CreateStatements {
  /** The record of this key (live or expired) with its pet, if any. */
  findKey: (idem: IdempotencyKey) => IdemRecord | undefined
  /** Removes this key's (expired) record. */
  dropKey: (idem: IdempotencyKey) => void
  /** Inserts one pet; its id. */
  insertPet: (pet: NewPet) => bigint
  /** Records that this key created pet `petId`, at `idem.now`. */
  recordKey: (idem: IdempotencyKey, petId: bigint) => void
}

/** The same statements over an asynchronous driver. */
export type AsyncCreateStatements = { [K in keyof CreateStatements]: (...args: Parameters<CreateStatements[K]>) => Promise<ReturnType<CreateStatements[K]>> }

type Step = { [K in keyof CreateStatements]: { op: K, args: Parameters<CreateStatements[K]> } }[keyof CreateStatements]
type Steps<T> = Generator<Step, T, unknown>

function * ask<K extends keyof CreateStatements> (op: K, ...args: Parameters<CreateStatements[K]>): Steps<ReturnType<CreateStatements[K]>> {
  return (yield { op, args } as Step) as ReturnType<CreateStatements[K]>
}

/**
 * The batch, item by item in order. A key whose record is live answers from it (the same body
 * replays the pet it created, another body is a mismatch) and writes nothing; an expired record
 * counts as absent and is replaced. Items without a key just insert. Because the statements see
 * the earlier items' writes, two items with one key in a batch behave like two requests in a row.
 */
function * createBatch (items: CreateItem[]): Steps<CreateOutcome[]> {
  const out: CreateOutcome[] = []
  for (const { pet, idem } of items) {
    if (idem === undefined) {
      out.push(yield * ask('insertPet', pet))
      continue
    }
    const found = yield * ask('findKey', idem)
    if (found !== undefined && found.createdAt.getTime() >= idem.expiredBefore.getTime()) {
      out.push(found.fingerprint === idem.fingerprint ? found.pet : null)
      continue
    }
    if (found !== undefined) yield * ask('dropKey', idem)
    const id = yield * ask('insertPet', pet)
    yield * ask('recordKey', idem, id)
    out.push(id)
  }
  return out
}

type Call = (...args: unknown[]) => unknown

/** Runs a batch with synchronous statements (call it inside the store's transaction). */
export function runCreateBatch (items: CreateItem[], stmts: CreateStatements): CreateOutcome[] {
  const steps = createBatch(items)
  let next = steps.next()
  while (next.done !== true) next = steps.next((stmts[next.value.op] as Call)(...next.value.args))
  return next.value
}

/** Runs a batch with asynchronous statements (await it inside the store's transaction). */
export async function runCreateBatchAsync (items: CreateItem[], stmts: AsyncCreateStatements): Promise<CreateOutcome[]> {
  const steps = createBatch(items)
  let next = steps.next()
  while (next.done !== true) next = steps.next(await (stmts[next.value.op] as Call)(...next.value.args))
  return next.value
}

/**
 * The create half of a Store: submissions are group-committed through `commit` (one transaction
 * and one flush for every create that arrived meanwhile), and each caller gets its own result.
 */
export class PetCreates {
  private readonly batches: GroupCommit<CreateItem, CreateOutcome>

  constructor (commit: (items: CreateItem[]) => Promise<CreateOutcome[]>) {
    this.batches = new GroupCommit(commit)
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
