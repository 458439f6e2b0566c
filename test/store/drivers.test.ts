import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { PG_ROUTES, tempDir, testDatabaseUrl } from '../helpers/app.js'
import { childEnv, ROOT } from '../helpers/process.js'

/*
 * Each database's driver is loaded only when a store of its kind is used. A fresh Node process
 * starts with a resolve hook (--import) that refuses the other driver's package, then opens, uses and
 * closes the compiled store (dist/store: openStore, migrateStore, a transfer reader and writer) of
 * one kind, or runs the built CLI on it: any import of the refused package, eager or not, fails it.
 */
const dataUrl = (js: string) => `data:text/javascript,${encodeURIComponent(js)}`
const refusing = (pkg: string) => dataUrl(`import { register } from 'node:module'
register(${JSON.stringify(dataUrl(`export async function resolve (s, c, next) { if (s === ${JSON.stringify(pkg)}) throw new Error('loaded ' + s); return next(s, c) }`))})`)

const CHILD = `
const [distStore, url] = process.argv.slice(1)
const only = process.env.ONLY_IMPORT
if (only !== undefined) {
  await import(new URL(only, distStore).href)
} else {
  const { migrateStore, openStore } = await import(new URL('index.js', distStore).href)
  const { openTransferReader, openTransferWriter } = await import(new URL('transfer.js', distStore).href)
  const database = url.startsWith('sqlite:') ? { kind: 'sqlite', path: url.slice('sqlite:'.length) } : { kind: 'postgres', url }
  const config = { database, pgPoolMax: 2, pgStatementTimeoutMs: 5000, pgConnectTimeoutMs: 5000, pgPreparedStatements: 'auto' }
  await migrateStore(config)
  const store = await openStore(config)
  await store.createPet({ name: 'loaded alone', categoryId: 1n, status: 'available' })
  await store.close()
  const reader = await openTransferReader(database, config)
  const counts = await reader.begin(0)
  await reader.end()
  await reader.close()
  const writer = await openTransferWriter(database, config)
  await writer.begin()
  await writer.rollback()
  await writer.close()
  console.log(JSON.stringify(counts))
}
`

interface Run { code: number | null, stdout: string, stderr: string }

async function runNode (refused: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return await new Promise((resolve) => {
    execFile(process.execPath, ['--import', refusing(refused), ...args], { cwd: ROOT, env: childEnv(env), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : (err as { code?: number }).code ?? null, stdout, stderr })
    })
  })
}

async function runChild (refused: string, url: string, onlyImport?: string): Promise<Run> {
  const distStore = pathToFileURL(join(ROOT, 'dist/store/')).href
  return await runNode(refused, ['--input-type=module', '-e', CHILD, distStore, url], onlyImport === undefined ? {} : { ONLY_IMPORT: onlyImport })
}

const CLI = join(ROOT, 'dist/cli/index.js')

describe('database drivers', () => {
  it('the check sees a driver loaded: importing the PostgreSQL store with pg refused fails', async () => {
    const res = await runChild('pg', 'sqlite::memory:', 'postgres/index.js')
    assert.notEqual(res.code, 0)
    assert.match(res.stderr, /loaded pg/)
  })

  it('the check sees a driver loaded: importing the SQLite store with better-sqlite3 refused fails', async () => {
    const res = await runChild('better-sqlite3', 'sqlite::memory:', 'sqlite/index.js')
    assert.notEqual(res.code, 0)
    assert.match(res.stderr, /loaded better-sqlite3/)
  })

  it('a SQLite store, its migration and its transfer reader and writer never load pg', async (t) => {
    const res = await runChild('pg', `sqlite:${join(tempDir(t), 'petstore.db')}`)
    assert.equal(res.code, 0, res.stderr)
    assert.equal(JSON.parse(res.stdout).pets, 1)
  })

  it('the petstore CLI on SQLite (migrate, backup, export) never loads pg', async (t) => {
    const dir = tempDir(t)
    const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
    for (const args of [['migrate'], ['backup', join(dir, 'backup.db')], ['export', '--out', join(dir, 'export.ndjson')]]) {
      const res = await runNode('pg', [CLI, ...args], env)
      assert.equal(res.code, 0, `${args[0]}: ${res.stderr}`)
    }
  })

  for (const route of PG_ROUTES.filter(r => r === 'postgres')) {
    it('a PostgreSQL store, its migration and its transfer reader and writer never load better-sqlite3', async (t) => {
      const res = await runChild('better-sqlite3', await testDatabaseUrl(t, route))
      assert.equal(res.code, 0, res.stderr)
      assert.equal(JSON.parse(res.stdout).pets, 1)
    })

    it('the petstore CLI on PostgreSQL (migrate, export) never loads better-sqlite3', async (t) => {
      const env = { DATABASE_URL: await testDatabaseUrl(t, route) }
      for (const args of [['migrate'], ['export', '--out', join(tempDir(t), 'export.ndjson')]]) {
        const res = await runNode('better-sqlite3', [CLI, ...args], env)
        assert.equal(res.code, 0, `${args[0]}: ${res.stderr}`)
      }
    })
  }
})
