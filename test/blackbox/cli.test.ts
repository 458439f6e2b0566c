import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { tempDir } from '../helpers/app.js'
import { runCli, startServer } from '../helpers/process.js'

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

describe('the petstore CLI (black box)', () => {
  it('keys create prints the key alone; keys list shows id first and never a secret or hash', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
    const a = await runCli(['keys', 'create', '--name', 'alpha', '--create'], env)
    const b = await runCli(['keys', 'create', '--name', 'beta team'], env)
    for (const r of [a, b]) {
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /^psk_[A-Za-z0-9_-]{43}\n$/)
    }
    assert.match(a.stderr, /created key 1 \(alpha\)/)
    const keys = [a.stdout.trim(), b.stdout.trim()]

    const list = await runCli(['keys', 'list'], env)
    assert.equal(list.code, 0, list.stderr)
    const rows = list.stdout.trimEnd().split('\n').map(l => l.split('\t'))
    assert.deepEqual(rows.map(r => [r[0], r[1], r[3], r[4]]), [['1', 'alpha', '-', '-'], ['2', 'beta team', '-', '-']])
    for (const r of rows) assert.ok(!Number.isNaN(Date.parse(r[2]!)), `created: ${r[2]}`)

    const json = await runCli(['keys', 'list', '--json'], env)
    assert.equal(json.code, 0, json.stderr)
    assert.deepEqual((JSON.parse(json.stdout) as Array<{ id: number, name: string }>).map(k => [k.id, k.name]), [[1, 'alpha'], [2, 'beta team']])

    const everything = list.stdout + list.stderr + json.stdout + json.stderr
    for (const key of keys) {
      assert.equal(everything.includes(key.slice(4)), false, 'a secret was listed')
      assert.equal(everything.includes(sha256(key)), false, 'a hash was listed')
    }
  })

  it('keys revoke makes a running server refuse the key within 1 second', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
    const made = await runCli(['keys', 'create', '--name', 'doomed', '--create'], env)
    const keep = await runCli(['keys', 'create', '--name', 'kept'], env)
    const server = await startServer(t, env)
    const call = (key: string) => fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })

    assert.equal((await call(made.stdout.trim())).status, 200)
    const revoked = await runCli(['keys', 'revoke', '1'], env)
    assert.equal(revoked.code, 0, revoked.stderr)
    assert.match(revoked.stderr, /key 1 revoked/)
    await sleep(1000)
    const res = await call(made.stdout.trim())
    assert.equal(res.status, 401)
    assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/)
    assert.equal((await call(keep.stdout.trim())).status, 200)

    const list = await runCli(['keys', 'list'], env)
    const row = list.stdout.split('\n').find(l => l.startsWith('1\t'))!.split('\t')
    assert.ok(!Number.isNaN(Date.parse(row[4]!)), `revoked column: ${row[4]}`)
  })

  it('keys revoke fails with exit 1 for an unknown id and exit 2 for a malformed one', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
    assert.equal((await runCli(['migrate'], env)).code, 0)
    const unknown = await runCli(['keys', 'revoke', '42'], env)
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /no key with id 42/)
    assert.equal(unknown.stdout, '')
    const malformed = await runCli(['keys', 'revoke', 'abc'], env)
    assert.equal(malformed.code, 2)
    assert.match(malformed.stderr, /Usage: petstore keys revoke/)
  })

  it('migrate applies the schema once and reports it is up to date after', async (t) => {
    const path = join(tempDir(t), 'sub', 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${path}` }
    const first = await runCli(['migrate'], env)
    assert.equal(first.code, 0, first.stderr)
    assert.match(first.stderr, /applied migrations: 1/)
    assert.equal(first.stdout, '')
    const db = new Database(path, { readonly: true })
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map(r => r.name)
    db.close()
    for (const table of ['api_keys', 'pets', 'schema_migrations', 'settings']) assert.ok(tables.includes(table), table)
    const second = await runCli(['migrate'], env)
    assert.equal(second.code, 0)
    assert.match(second.stderr, /schema is up to date/)
  })

  it('prints --help on every command, exit 0', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
    const commands = [[], ['serve'], ['migrate'], ['keys'], ['keys', 'create'], ['keys', 'list'], ['keys', 'revoke']]
    for (const cmd of commands) {
      const r = await runCli([...cmd, '--help'], env)
      assert.equal(r.code, 0, `${cmd.join(' ')}: ${r.stderr}`)
      assert.match(r.stdout, new RegExp(`^Usage: ${['petstore', ...cmd].join(' ')} `))
      if (cmd[0] === 'serve') assert.match(r.stdout, /docs\/reference\/configuration\.md/, 'serve --help points to the settings')
    }
  })

  it('answers a usage error with the usage on stderr and exit 2', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
    const cases: Array<[string[], RegExp]> = [
      [['frobnicate'], /error: unknown command 'frobnicate'[\s\S]*Usage: petstore /],
      [['keys', 'frob'], /error: unknown command 'frob'[\s\S]*Usage: petstore keys /],
      [[], /Usage: petstore /],
      [['keys'], /Usage: petstore keys /],
      [['keys', 'create'], /required option '--name <name>' not specified[\s\S]*Usage: petstore keys create/],
      [['migrate', '--bogus'], /unknown option '--bogus'/],
      // A mistyped option is named before the required one it stood for is missed.
      [['keys', 'create', '--nmae', 'bob'], /^error: unknown option '--nmae'\n\(Did you mean --name\?\)[\s\S]*Usage: petstore keys create/],
      [['keys', 'list', '--jsn'], /^error: unknown option '--jsn'\n\(Did you mean --json\?\)/]
    ]
    for (const [args, stderr] of cases) {
      const r = await runCli(args, env)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, stderr)
      assert.equal(r.stdout, '')
    }
  })

  it('exits 1 naming the variable when a setting is bad', async (t) => {
    const good = `sqlite:${join(tempDir(t), 'petstore.db')}`
    const cases: Array<[string[], string, string]> = [
      [['keys', 'list'], 'DATABASE_URL', 'mysql://localhost/db'],
      [['keys', 'create', '--name', 'x', '--create'], 'PORT', 'abc'],
      [['migrate'], 'LOG_LEVEL', 'loud'],
      [['serve'], 'PORT', '99999']
    ]
    for (const [args, name, value] of cases) {
      const r = await runCli(args, { DATABASE_URL: good, [name]: value })
      assert.equal(r.code, 1, `${args.join(' ')} with ${name}=${value}: ${r.stderr}`)
      assert.match(r.stderr, new RegExp(`invalid configuration: ${name}: `))
      assert.equal(r.stdout, '')
    }
  })
})
