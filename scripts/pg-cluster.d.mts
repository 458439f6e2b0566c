export interface Cluster {
  /** Admin URL: user postgres, database postgres, on 127.0.0.1. */
  url: string
  port: number
  dir: string
  /** Starts the server again (same port, same data) after stop(). */
  start: () => Promise<void>
  /** Fast shutdown: clients are disconnected. */
  stop: () => Promise<void>
  /** Sends a signal to the postmaster and all its children: SIGSTOP freezes the server, SIGCONT thaws it. */
  signal: (sig: NodeJS.Signals) => void
  /** The postmaster's pid, then its children's (backends, WAL writer, checkpointer…). */
  pids: () => number[]
  /** Stops the server and deletes its files. */
  destroy: () => Promise<void>
  /** Immediate shutdown and deletion, synchronously (for an 'exit' handler). */
  destroyNow: () => void
}
export function findPgBin (): string
/** `password`: the postgres user gets it, and TCP logins must give it (scram-sha-256); url carries it. */
export function startCluster (opts?: { maxConnections?: number, password?: string }): Promise<Cluster>
