/**
 * Schema migrations, the part that is the same on every store: each store lists its own (its SQL),
 * frozen once released (never edit one, add the next), with the same versions and names, and
 * applies them in a loop of its own (better-sqlite3 answers synchronously, pg asynchronously):
 * in version order, each not yet applied in a transaction of its own that first takes the store's
 * migration lock, so a migrator that dies mid-way leaves every migration applied and recorded, or
 * not at all, and processes starting at once apply each exactly once.
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

/** Refuses a list whose versions do not run 1, 2, 3… in order, before anything is applied. */
export function checkVersions (migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration "${m.name}" has version ${m.version}; expected ${i + 1} (versions run 1, 2, 3… in order)`)
  })
}
