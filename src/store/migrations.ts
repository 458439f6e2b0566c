/**
 * Schema migrations, the part that is the same on every store: each store lists its own (its SQL),
 * frozen once released (never edit one, add the next), with the same versions and names, and says
 * how it runs a transaction that holds its migration lock; this applies them.
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

/** better-sqlite3 answers synchronously, pg asynchronously: a store's steps are all one or all the other. */
type Answer<Mode, T> = Mode extends 'async' ? Promise<T> : T

/** What a store provides to apply its migrations. */
export interface MigrationTarget<Mode extends 'sync' | 'async'> {
  /**
   * Runs `body` in a transaction of its own that first takes the store's migration lock (so
   * processes starting at once apply each migration exactly once), commits when it returns, rolls
   * back when it throws; answers what `body` answered.
   */
  transaction: (body: () => Answer<Mode, boolean>) => Answer<Mode, boolean>
  /** Whether `version` is recorded as applied (read inside the transaction, after the lock). */
  isApplied: (version: number) => Answer<Mode, boolean>
  /** Runs the migration's SQL and records it as applied. */
  apply: (migration: Migration) => Answer<Mode, void>
}

type Maybe<T> = T | Promise<T>
/** Either mode, as the loop sees it (method syntax: a store's narrower signatures fit). */
interface AnyTarget {
  transaction (body: () => Maybe<boolean>): Maybe<boolean>
  isApplied (version: number): Maybe<boolean>
  apply (migration: Migration): Maybe<void>
}

/** `f(value)`, at once when the value is there, after it when it is a promise. */
function then<T, U> (value: Maybe<T>, f: (v: T) => Maybe<U>): Maybe<U> {
  return value instanceof Promise ? value.then(f) : f(value)
}

/**
 * Applies, in version order, each migration not yet applied, each in its own transaction (a
 * migrator that dies mid-way leaves every migration either applied and recorded, or not at all);
 * answers the versions it applied. Versions must run 1, 2, 3… with no gap.
 */
export function applyMigrations (migrations: readonly Migration[], target: MigrationTarget<'sync'>): number[]
export function applyMigrations (migrations: readonly Migration[], target: MigrationTarget<'async'>): Promise<number[]>
export function applyMigrations (migrations: readonly Migration[], target: AnyTarget): Maybe<number[]> {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration "${m.name}" has version ${m.version}; expected ${i + 1} (versions run 1, 2, 3… in order)`)
  })
  const applied: number[] = []
  const from = (i: number): Maybe<number[]> => {
    const m = migrations[i]
    if (m === undefined) return applied
    const done = target.transaction(() => then(target.isApplied(m.version), (yes) => yes ? false : then(target.apply(m), () => true)))
    return then(done, (did) => {
      if (did) applied.push(m.version)
      return from(i + 1)
    })
  }
  return from(0)
}
