import { InvalidArgumentError, type Command } from 'commander'
import type { Clock } from '../../runtime/clock.js'
import { ALL_SCOPES, isScope, type Scope } from '../../schemas/scopes.js'
import type { ApiKeyRecord } from '../../store/store.js'
import { createApiKey, keyState, type KeyState } from '../../services/api-keys.js'
import { CliError, EXIT } from '../exit.js'
import { printRows, type Column } from '../output.js'
import { withCreateOption, withStore, type StoreOptions } from '../store.js'
import { parseDuration, parseWhen } from '../when.js'

const iso = (d: Date | null) => d === null ? '-' : d.toISOString()
/** To the minute, in UTC (the Z says so): 2026-11-28 05:20Z. */
const minute = (d: Date | null) => d === null ? '-' : `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)}Z`

function parseId (value: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(value)) throw new InvalidArgumentError('ID must be a positive integer (see petstore keys list)')
  return Number(value)
}

/** A usage error (exit 2) rather than a failure: nothing was tried. */
function parseName (value: string): string {
  const name = value.trim()
  if (name === '' || name.length > 100) throw new InvalidArgumentError('NAME must be 1 to 100 characters, not only spaces')
  return name
}

/** --scope, repeatable, each a scope or a comma-separated list of them: the set so far. */
function parseScopes (value: string, previous: Scope[] | undefined): Scope[] {
  const set = new Set(previous)
  for (const word of value.split(',')) {
    const s = word.trim()
    if (!isScope(s)) throw new InvalidArgumentError(`SCOPE must be one of ${ALL_SCOPES.join(', ')} (repeat --scope or separate with commas); got ${JSON.stringify(s)}`)
    set.add(s)
  }
  return ALL_SCOPES.filter(s => set.has(s))
}

interface Listed { record: ApiKeyRecord, state: KeyState }

// Scripts cut the tab-separated lines by position: new columns go at the end.
const COLUMNS = [
  { header: 'id', value: (r: Listed) => String(r.record.id) },
  { header: 'name', value: (r: Listed) => r.record.name },
  { header: 'created', value: (r: Listed) => iso(r.record.createdAt) },
  { header: 'last used', value: (r: Listed) => iso(r.record.lastUsedAt) },
  { header: 'revoke at', value: (r: Listed) => iso(r.record.revokedAt) },
  { header: 'scopes', value: (r: Listed) => r.record.scopes.join(',') },
  { header: 'expires', value: (r: Listed) => iso(r.record.expiresAt) },
  { header: 'state', value: (r: Listed) => r.state }
]

/** When a key stops working (or stopped): the earlier of its revocation and its expiry. */
function worksUntil (r: ApiKeyRecord): Date | null {
  const ends = [r.revokedAt, r.expiresAt].filter(d => d !== null)
  return ends.length === 0 ? null : new Date(Math.min(...ends.map(d => d.getTime())))
}

// On a terminal without --wide: what fits 80 columns (the name is cut to the terminal's width).
const TERMINAL_COLUMNS: Array<Column<Listed>> = [
  { header: 'id', value: (r: Listed) => String(r.record.id) },
  { header: 'name', value: (r: Listed) => r.record.name, shrink: true },
  { header: 'state', value: (r: Listed) => r.state },
  { header: 'works until', value: (r: Listed) => minute(worksUntil(r.record)) },
  { header: 'last used', value: (r: Listed) => minute(r.record.lastUsedAt) },
  { header: 'scopes', value: (r: Listed) => r.record.scopes.length === ALL_SCOPES.length ? 'all' : r.record.scopes.join(',') }
]

export function registerKeysCommands (program: Command, clock: Clock): void {
  const keys = program.command('keys').summary('Create, list and revoke API keys').description('Create, list and revoke API keys.')

  withCreateOption(keys.command('create'))
    .summary('Create an API key, printed once on stdout')
    .description('Create an API key and print it alone on stdout. It is shown only this once; only its SHA-256 hash is stored. ' +
      'Without --scope the key holds every scope; without --expires it never expires.')
    .requiredOption('--name <name>', 'a label for the key, e.g. the team or client that uses it (1 to 100 characters)', parseName)
    .option('--scope <scope>', `what the key may do: ${ALL_SCOPES.join(', ')}; repeat, or separate with commas, for several (default: all)`, parseScopes)
    .option('--expires <when>', 'when the key stops working: an ISO 8601 time (2027-01-31, 2027-01-31T12:00:00Z) or a duration from now (30s, 15m, 12h, 90d)', parseWhen)
    .action(async (opts: StoreOptions & { name: string, scope?: Scope[], expires?: (now: number) => Date }, cmd: Command) => {
      const now = clock()
      const expiresAt = opts.expires?.(now) ?? null
      if (expiresAt !== null && expiresAt.getTime() <= now) cmd.error(`error: option '--expires <when>' argument names ${expiresAt.toISOString()}, which is not in the future`)
      const { key, record } = await withStore(opts, store => createApiKey(store, opts.name, { scopes: opts.scope ?? ALL_SCOPES, expiresAt }, new Date(now)))
      const expiry = record.expiresAt === null ? 'never expires' : `expires ${record.expiresAt.toISOString()}`
      process.stderr.write(`created key ${record.id} (${record.name}), scopes ${record.scopes.join(',')}, ${expiry}; store it now, it cannot be shown again\n`)
      await new Promise<void>((resolve, reject) => { process.stdout.write(`${key}\n`, err => { if (err == null) resolve(); else reject(err) }) })
        .catch((err: NodeJS.ErrnoException) => {
          throw new CliError(`key ${record.id} was created but could not be printed (${err.code ?? err.message}): revoke it with \`petstore keys revoke ${record.id}\` and create another`)
        })
    })

  withCreateOption(keys.command('list'))
    .summary('List API keys (never a secret)')
    .description('List keys: id, name, created, last used, revoke at, scopes, expires, state (active, expired, revoked). ' +
      'On a terminal, a table that fits its width (80 columns): id, name (cut to fit), state, works until (the earlier of revoke at and expires), ' +
      'last used (to the minute, UTC) and scopes ("all" for every scope); --wide shows every column in full. ' +
      'Piped, tab-separated lines of every column; --json for JSON. Never shows secrets or hashes. ' +
      'A revoke-at time in the future is a scheduled revocation: the key works until then.')
    .option('--json', 'print a JSON array')
    .option('--wide', 'on a terminal, every column in full (wider than 80 columns)')
    .option('--active', 'only keys that work now (neither expired nor revoked)')
    .option('--expired', 'only keys whose expiry has passed')
    .action(async (opts: StoreOptions & { json?: boolean, wide?: boolean, active?: boolean, expired?: boolean }, cmd: Command) => {
      if (opts.active === true && opts.expired === true) cmd.error('error: --active and --expired exclude each other')
      const { records, color } = await withStore(opts, async (store, config) => ({ records: await store.listApiKeys(), color: config.color }))
      const now = clock()
      const listed = records
        .map(record => ({ record, state: keyState(record, now) }))
        .filter(r => opts.active === true
          ? r.state === 'active'
          : opts.expired !== true || (r.record.expiresAt !== null && r.record.expiresAt.getTime() <= now))
      if (opts.json === true) {
        process.stdout.write(JSON.stringify(listed.map(({ record: r, state }) => ({
          id: r.id, name: r.name, scopes: r.scopes, state, createdAt: r.createdAt, expiresAt: r.expiresAt, lastUsedAt: r.lastUsedAt, revokedAt: r.revokedAt
        })), null, 2) + '\n')
        return
      }
      if (records.length === 0) process.stderr.write('no API keys yet; make one with: petstore keys create --name NAME\n')
      else if (listed.length === 0) process.stderr.write(`no ${opts.active === true ? 'active' : 'expired'} API keys (of ${records.length})\n`)
      else printRows(listed, COLUMNS, opts.wide === true ? COLUMNS : TERMINAL_COLUMNS, color)
    })

  withCreateOption(keys.command('revoke'))
    .summary('Revoke a key, now or --after a delay')
    .description('Revoke a key by id, now or --after a delay (the key works until then: rotate by creating its successor, deploying it, ' +
      'and revoking the old key --after the deployment window). Running servers refuse it within 1 second of that time. ' +
      'A revocation only moves earlier. Exit 3 when the key was already revoked, or is already to be revoked no later.')
    .argument('<id>', 'the key id from petstore keys list', parseId)
    .option('--after <duration>', 'revoke this long from now: 30s, 15m, 12h, 90d', parseDuration)
    .action(async (id: number, opts: StoreOptions & { after?: number }) => {
      const now = clock()
      const at = new Date(now + (opts.after ?? 0))
      await withStore(opts, async (store) => {
        // Read first so an already-revoked key is told apart (exit 3) and keeps its first revocation time.
        const record = (await store.listApiKeys()).find(r => r.id === id)
        if (record === undefined) throw new CliError(`no key with id ${id} (see petstore keys list)`)
        const revokedAt = record.revokedAt
        if (revokedAt !== null && revokedAt.getTime() <= now) throw new CliError(`key ${id} (${record.name}) was already revoked at ${revokedAt.toISOString()}; nothing to do`, EXIT.nothingToDo)
        if (revokedAt !== null && revokedAt <= at) throw new CliError(`key ${id} (${record.name}) is already to be revoked at ${revokedAt.toISOString()}, no later than asked; nothing to do`, EXIT.nothingToDo)
        await store.revokeApiKey(id, at)
      })
      process.stderr.write(opts.after === undefined ? `key ${id} revoked\n` : `key ${id} will be revoked at ${at.toISOString()}; it works until then\n`)
    })
}
