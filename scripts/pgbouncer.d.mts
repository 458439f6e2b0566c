export interface PgBouncer {
  /** The server URL given, with the pooler's port. */
  url: string
  port: number
  dir: string
  /** Immediate shutdown: every client connection is closed. */
  stop: () => Promise<void>
  /** Starts it again (same port, same settings) after stop(). */
  start: () => Promise<void>
  /** PgBouncer's pid (none when it is not running). */
  pids: () => number[]
  /** Stops it and deletes its files. */
  destroy: () => Promise<void>
  /** Stops it without waiting and deletes its files (for an 'exit' handler). */
  destroyNow: () => void
}
export function findPgBouncer (): string
export function startPgBouncer (serverUrl: string, settings?: Record<string, string | number>): Promise<PgBouncer>
