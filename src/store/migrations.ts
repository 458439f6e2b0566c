/**
 * Each store lists its own migrations with the same versions and names, and applies each not yet
 * applied in a transaction of its own under the store's migration lock: a dead migrator leaves each
 * applied and recorded or not at all, and concurrent starts apply each once.
 */
export interface Migration {
  readonly version: number
  readonly name: string
  readonly sql: string
}

export function checkVersions (migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration "${m.name}" has version ${m.version}; expected ${i + 1} (versions run 1, 2, 3… in order)`)
  })
}
