import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { tempDir } from '../helpers/app.js'
import { childEnv, ROOT, runCli, startServer } from '../helpers/process.js'

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

  it('with its reader gone before the output (`| head -1`): a list ends quietly, exit 0; an export, a new key or a failed check exits 1', async (t) => {
    const db = join(tempDir(t), 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${db}` }
    assert.equal((await runCli(['keys', 'create', '--name', 'alpha', '--create'], env)).code, 0)
    assert.equal((await runCli(['keys', 'create', '--name', 'beta'], env)).code, 0)
    /** Runs the CLI with a stdout whose reader is gone before the command started: its first write meets EPIPE. */
    const withClosedStdout = async (args: string[]) => {
      const child = spawn(process.execPath, [join(ROOT, 'dist/cli/index.js'), ...args], { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
      child.stdout.destroy()
      let stderr = ''
      child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
      const [code] = await once(child, 'close') as [number | null]
      return { code, stderr }
    }
    const named = `petstore: store: SQLite ${db}\n`

    // Output only to look at: the store it names, and nothing else (no stack trace).
    assert.deepEqual(await withClosedStdout(['keys', 'list']), { code: 0, stderr: named })

    const exported = await withClosedStdout(['export'])
    assert.equal(exported.code, 1)
    assert.match(exported.stderr, /^petstore: the output closed before the export was complete \(EPIPE\)$/m)

    // The key is stored before its secret is printed: the line names it, to be revoked.
    const created = await withClosedStdout(['keys', 'create', '--name', 'gamma'])
    assert.equal(created.code, 1)
    assert.match(created.stderr, /^petstore: key 3 was created but could not be printed \(EPIPE\): revoke it with `petstore keys revoke 3` and create another$/m)
    // A failed check keeps its exit code (nothing listens on port 1).
    const checked = await withClosedStdout(['conformance', '--base-url', 'http://127.0.0.1:1', '--key', `psk_${'a'.repeat(43)}`])
    assert.equal(checked.code, 1)
    assert.match(checked.stderr, /^1 checks against http:\/\/127\.0\.0\.1:1: 0 passed, 1 failed, 0 skipped$/m)
    for (const r of [exported, created, checked]) assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')
  })

  it('keys revoke makes a running server that accepted the key refuse it', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
    const made = await runCli(['keys', 'create', '--name', 'doomed', '--create'], env)
    const keep = await runCli(['keys', 'create', '--name', 'kept'], env)
    // The key cache off, so the revocation is seen at once: how long the cache may trust a key
    // (KEY_CACHE_TTL_MS, at most 1 s) is tested in-process by the app's clock (test/plugins/auth.test.ts).
    const server = await startServer(t, { ...env, KEY_CACHE_TTL_MS: '0' })
    const call = (key: string) => fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })

    assert.equal((await call(made.stdout.trim())).status, 200)
    const revoked = await runCli(['keys', 'revoke', '1'], env)
    assert.equal(revoked.code, 0, revoked.stderr)
    assert.match(revoked.stderr, /key 1 revoked/)
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
    assert.match(malformed.stderr, /^petstore: error: .*ID must be a positive integer.*\nRun 'petstore keys revoke --help' for usage\.\n$/)
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

  it('answers a usage error with one line and where the usage is, on stderr, exit 2; a missing command with the help', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
    const hint = (command: string) => `\nRun '${command} --help' for usage.\n`
    const cases: Array<[string[], string]> = [
      [['frobnicate'], "petstore: error: unknown command 'frobnicate'" + hint('petstore')],
      [['keys', 'frob'], "petstore: error: unknown command 'frob'" + hint('petstore keys')],
      [['keys', 'create'], "petstore: error: required option '--name <name>' not specified" + hint('petstore keys create')],
      [['migrate', '--bogus'], "petstore: error: unknown option '--bogus'" + hint('petstore migrate')],
      // A mistyped option is named before the required one it stood for is missed.
      [['keys', 'create', '--nmae', 'x'], "petstore: error: unknown option '--nmae' (did you mean --name?)" + hint('petstore keys create')],
      [['keys', 'list', '--jsn'], "petstore: error: unknown option '--jsn' (did you mean --json?)" + hint('petstore keys list')],
      [['keys', 'list', '--active', '--expired'], 'petstore: error: --active and --expired exclude each other' + hint('petstore keys list')]
    ]
    for (const [args, stderr] of cases) {
      const r = await runCli(args, env)
      assert.deepEqual([r.code, r.stderr, r.stdout], [2, stderr, ''], args.join(' '))
      assert.ok(r.stderr.split('\n').length - 1 <= 3, `at most 3 lines: ${r.stderr}`)
    }
    // Without a command there is no mistake to name: the help, on stderr.
    for (const args of [[], ['keys']]) {
      const r = await runCli(args, env)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, new RegExp(`^Usage: ${['petstore', ...args].join(' ')} `))
      assert.equal(r.stdout, '')
    }
  })

  it('top-level help lists each command on one line, within 80 columns', async () => {
    const r = await runCli(['--help'], {})
    assert.equal(r.code, 0, r.stderr)
    const lines = r.stdout.split('\n')
    for (const line of lines) assert.ok(line.length <= 80, `${line.length} columns: ${line}`)
    const commands = lines.slice(lines.indexOf('Commands:') + 1, lines.indexOf('', lines.indexOf('Commands:')))
    // One line per command: each starts with its name, none is a wrapped continuation.
    const names = commands.map(l => /^ {2}(\S+)/.exec(l)?.[1])
    for (const [i, name] of names.entries()) assert.ok(name !== undefined, `a wrapped line in the command list: ${commands[i]}`)
    for (const name of ['serve', 'migrate', 'keys', 'backup', 'export', 'import', 'copy', 'help']) assert.ok(names.includes(name), `${name} is listed`)
    assert.ok(lines.length <= 30, `short: ${lines.length} lines`)
  })

  it('names its store on stderr with stdout and stderr piped or in a file: backup, export, import, copy', async (t) => {
    const dir = tempDir(t)
    const db = join(dir, 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${db}` }
    assert.equal((await runCli(['keys', 'create', '--name', 'k', '--create'], env)).code, 0)
    const store = `petstore: store: SQLite ${db}\n`
    const backup = await runCli(['backup', join(dir, 'b.db')], env)
    assert.deepEqual([backup.code, backup.stdout], [0, ''], backup.stderr)
    assert.match(backup.stderr, new RegExp(`^${store}backed up 0 pets and 1 API keys to ${join(dir, 'b.db')} \\(\\d+ bytes, integrity_check ok\\)\n$`))
    const exported = await runCli(['export', '--out', join(dir, 'e.ndjson')], env)
    assert.deepEqual([exported.code, exported.stdout], [0, ''], exported.stderr)
    assert.match(exported.stderr, new RegExp(`^${store}exported 0 pets, 1 API keys, `))
    const json = await runCli(['backup', join(dir, 'b2.db'), '--json'], env)
    assert.equal(json.stderr, store, 'with --json, the summary is on stdout only')
    assert.equal((JSON.parse(json.stdout) as { command: string }).command, 'backup')
    const other = join(dir, 'other.db')
    const imported = await runCli(['import', join(dir, 'e.ndjson')], { DATABASE_URL: `sqlite:${other}` })
    assert.equal(imported.code, 0, imported.stderr)
    assert.match(imported.stderr, new RegExp(`^petstore: store: SQLite ${other}\nimported 0 pets, 1 API keys, `))
    const copied = await runCli(['copy', '--to', `sqlite:${join(dir, 'copy.db')}`], env)
    assert.equal(copied.code, 0, copied.stderr)
    assert.match(copied.stderr, new RegExp(`^${store}petstore: target: SQLite ${join(dir, 'copy.db')}\ncopy verified: `))
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
