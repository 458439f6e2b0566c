import type { Command } from 'commander'
import { InvalidArgumentError } from 'commander'
import { createApiKey } from '../../services/api-keys.js'
import { openStore, type Store } from '../../store/index.js'
import { loadCliConfig } from '../config.js'

async function withStore<T> (fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(loadCliConfig())
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

const iso = (d: Date | null) => d === null ? '-' : d.toISOString()

function parseId (value: string): number {
  if (!/^[1-9][0-9]{0,15}$/.test(value)) throw new InvalidArgumentError('ID must be a positive integer (see petstore keys list)')
  return Number(value)
}

export function registerKeysCommands (program: Command): void {
  const keys = program.command('keys').description('Create, list and revoke API keys.')

  keys.command('create')
    .description('Create an API key and print it alone on stdout. It is shown only this once; only its SHA-256 hash is stored.')
    .requiredOption('--name <name>', 'a label for the key, e.g. the team or client that uses it')
    .action(async (opts: { name: string }) => {
      const name = opts.name.trim()
      if (name === '' || name.length > 100) throw new Error('--name must be 1 to 100 characters')
      const { key, record } = await withStore(store => createApiKey(store, name))
      process.stderr.write(`created key ${record.id} (${record.name}); store it now, it cannot be shown again\n`)
      process.stdout.write(`${key}\n`)
    })

  keys.command('list')
    .description('List keys: id, name, created, last used, revoked (tab-separated; --json for JSON). Never shows secrets or hashes.')
    .option('--json', 'print a JSON array')
    .action(async (opts: { json?: boolean }) => {
      const records = await withStore(store => store.listApiKeys())
      if (opts.json === true) {
        process.stdout.write(JSON.stringify(records.map(r => ({
          id: r.id, name: r.name, createdAt: r.createdAt, lastUsedAt: r.lastUsedAt, revokedAt: r.revokedAt
        })), null, 2) + '\n')
        return
      }
      if (process.stdout.isTTY === true) process.stderr.write('id\tname\tcreated\tlast used\trevoked\n')
      for (const r of records) {
        process.stdout.write(`${r.id}\t${r.name}\t${iso(r.createdAt)}\t${iso(r.lastUsedAt)}\t${iso(r.revokedAt)}\n`)
      }
    })

  keys.command('revoke')
    .description('Revoke a key by id. Running servers refuse it within 1 second.')
    .argument('<id>', 'the key id from petstore keys list', parseId)
    .action(async (id: number) => {
      const found = await withStore(store => store.revokeApiKey(id, new Date()))
      if (!found) throw new Error(`no key with id ${id}`)
      process.stderr.write(`key ${id} revoked\n`)
    })
}
