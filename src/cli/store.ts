import { existsSync } from 'node:fs'
import type { Command } from 'commander'
import { loadConfig, PROJECT_ROOT, type Config, type DatabaseLocation } from '../config/index.js'
import { describeFailure } from '../runtime/failure-lines.js'
import { openStore, type Store, type StoreConfig } from '../store/index.js'
import { openTransferReader } from '../store/transfer.js'
import type { TransferReader } from '../store/transfer/reader.js'
import { describeLocation } from '../store/location.js'
// store-file.ts, not start-checks.ts: this module must not load the SQLite driver (a PostgreSQL CLI never does).
import { isNew } from '../store/sqlite/store-file.js'
import { CliError } from './exit.js'

export interface StoreOptions { create?: boolean }

type DatabaseNeed = StoreOptions & { readsOnly?: boolean }

/** Adds --create to a command that opens the store (every command but serve and migrate, which always may create). */
export function withCreateOption (cmd: Command): Command {
  return cmd.option('--create', 'create the SQLite database when the file does not exist yet (without it, a missing file is an error)')
}

/**
 * The line on stderr that names the store a command uses, written whether or not stdout or stderr is
 * a terminal (a cron log shows which database a nightly backup read). `role` names a second store
 * (copy's target).
 */
export function sayStore (db: DatabaseLocation, role = 'store'): void {
  process.stderr.write(`petstore: ${role}: ${describeLocation(db)}\n`)
}

/** Says on stderr which store a command uses, then refuses a missing SQLite file as requireDatabase does. */
export function announceStore (config: Readonly<Config>, opts: DatabaseNeed = {}): void {
  sayStore(config.database)
  requireDatabase(config, opts)
}

/**
 * Refuses to make a fresh SQLite file unless asked: a command run from an unexpected directory, or
 * with a mistyped DATABASE_URL, must not silently work on a new empty database that no server reads.
 * A command that only reads the store (`readsOnly`: export, backup, copy's source) has no --create to offer.
 */
export function requireDatabase (config: Readonly<Config>, opts: DatabaseNeed = {}): void {
  const db = config.database
  if (db.kind !== 'sqlite' || db.path === ':memory:' || opts.create === true) return
  if (isNew(db.path)) {
    const why = config.databaseIsDefault
      ? `DATABASE_URL is unset: the default is data/petstore.db in the project directory ${PROJECT_ROOT}`
      : `from DATABASE_URL; a relative path is relative to the working directory ${process.cwd()}`
    throw new CliError(`no database at ${db.path} (${existsSync(db.path) ? 'an empty file; ' : ''}${why}); set DATABASE_URL to the database the server uses` +
      (opts.readsOnly === true ? '' : ', or pass --create to make a new empty one'))
  }
}

/** Opens the store DATABASE_URL names (after announceStore), runs fn, and closes it. */
export async function withStore<T> (opts: StoreOptions, fn: (store: Store, config: Readonly<Config>) => Promise<T>): Promise<T> {
  const config = loadConfig()
  announceStore(config, opts)
  try {
    const store = await openStore(config)
    try {
      return await fn(store, config)
    } finally {
      await store.close()
    }
  } catch (err) {
    if (err instanceof CliError) throw err
    throw new CliError(describeFailure(err, config))
  }
}

/** Opens a reader of the store at `location`, runs fn, and closes it. */
export async function reading<T> (location: DatabaseLocation, config: StoreConfig, fn: (reader: TransferReader) => Promise<T>): Promise<T> {
  const reader = await openTransferReader(location, config)
  try {
    return await fn(reader)
  } finally {
    await reader.close()
  }
}
