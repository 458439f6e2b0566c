import type { DatabaseLocation } from '../config/index.js'

/** Where a PostgreSQL URL points: host, port, database and user, never the password. */
export function postgresTarget (url: string): { host: string, port: string, database: string, user: string | undefined } {
  const u = new URL(url)
  // pg also takes the host from ?host= (a Unix socket directory, or a host when the authority is empty).
  const host = u.searchParams.get('host') ?? (u.hostname === '' ? 'localhost' : u.hostname)
  const user = u.username === '' ? undefined : decodeURIComponent(u.username)
  const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || (user ?? 'postgres')
  return { host, port: u.port === '' ? '5432' : u.port, database, user }
}

/** One phrase naming the store DATABASE_URL selects, for people: a path or host, never a password. */
export function describeLocation (db: DatabaseLocation): string {
  if (db.kind === 'sqlite') return db.path === ':memory:' ? 'SQLite in memory (sqlite::memory:, gone at exit)' : `SQLite ${db.path}`
  const t = postgresTarget(db.url)
  return `PostgreSQL database "${t.database}" on ${t.host}:${t.port}${t.user === undefined ? '' : ` as ${t.user}`}`
}
