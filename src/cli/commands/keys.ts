import type { Command } from 'commander'
import { InvalidArgumentError } from 'commander'
import type { ApiKeyRecord } from '../../store/store.js'
import { createApiKey } from '../../services/api-keys.js'
import { CliError, NothingToDo } from '../exit.js'
import { printRows } from '../output.js'
import { withCreateOption, withStore, type StoreOptions } from '../store.js'

const iso = (d: Date | null) => d === null ? '-' : d.toISOString()

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

const COLUMNS = [
  { header: 'id', value: (r: ApiKeyRecord) => String(r.id) },
  { header: 'name', value: (r: ApiKeyRecord) => r.name },
  { header: 'created', value: (r: ApiKeyRecord) => iso(r.createdAt) },
  { header: 'last used', value: (r: ApiKeyRecord) => iso(r.lastUsedAt) },
  { header: 'revoked', value: (r: ApiKeyRecord) => iso(r.revokedAt) }
]

export function registerKeysCommands (program: Command): void {
  const keys = program.command('keys').description('Create, list and revoke API keys.')

  withCreateOption(keys.command('create'))
    .description('Create an API key and print it alone on stdout. It is shown only this once; only its SHA-256 hash is stored.')
    .requiredOption('--name <name>', 'a label for the key, e.g. the team or client that uses it (1 to 100 characters)', parseName)
    .action(async (opts: StoreOptions & { name: string }) => {
      const { key, record } = await withStore(opts, store => createApiKey(store, opts.name))
      process.stderr.write(`created key ${record.id} (${record.name}); store it now, it cannot be shown again\n`)
      process.stdout.write(`${key}\n`)
    })

  withCreateOption(keys.command('list'))
    .description('List keys: id, name, created, last used, revoked. A table on a terminal, tab-separated lines when piped, --json for JSON. Never shows secrets or hashes.')
    .option('--json', 'print a JSON array')
    .action(async (opts: StoreOptions & { json?: boolean }) => {
      const { records, color } = await withStore(opts, async (store, config) => ({ records: await store.listApiKeys(), color: config.color }))
      if (opts.json === true) {
        process.stdout.write(JSON.stringify(records.map(r => ({
          id: r.id, name: r.name, createdAt: r.createdAt, lastUsedAt: r.lastUsedAt, revokedAt: r.revokedAt
        })), null, 2) + '\n')
        return
      }
      if (records.length === 0) process.stderr.write('no API keys yet; make one with: petstore keys create --name NAME\n')
      else printRows(records, COLUMNS, { color })
    })

  withCreateOption(keys.command('revoke'))
    .description('Revoke a key by id. Running servers refuse it within 1 second. Exit 3 when it was already revoked.')
    .argument('<id>', 'the key id from petstore keys list', parseId)
    .action(async (id: number, opts: StoreOptions) => {
      await withStore(opts, async (store) => {
        // Read first so an already-revoked key is told apart (exit 3) and keeps its first revocation time.
        const record = (await store.listApiKeys()).find(r => r.id === id)
        if (record === undefined) throw new CliError(`no key with id ${id} (see petstore keys list)`)
        if (record.revokedAt !== null) throw new NothingToDo(`key ${id} (${record.name}) was already revoked at ${record.revokedAt.toISOString()}; nothing to do`)
        await store.revokeApiKey(id, new Date())
      })
      process.stderr.write(`key ${id} revoked\n`)
    })
}
