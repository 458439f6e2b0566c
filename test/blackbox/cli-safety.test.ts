// requires: script
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import Database from 'better-sqlite3'
import { tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'
import { childEnv, ROOT, runCli, runInTerminal } from '../helpers/process.js'

const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }

/**
 * An installed copy of the project in a temporary directory (dist, package.json, the dependencies),
 * so the default database (data/petstore.db in the project directory) is this test's, not the repo's.
 */
function installedCopy (t: TestContext): { root: string, cli: string } {
  const root = tempDir(t, 'petstore-install-')
  cpSync(join(ROOT, 'dist'), join(root, 'dist'), { recursive: true })
  cpSync(join(ROOT, 'package.json'), join(root, 'package.json'))
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir')
  return { root, cli: join(root, 'dist', 'cli', 'index.js') }
}

describe('the petstore CLI cannot surprise (black box)', () => {
  it('prints its version with --version and -V, exit 0', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag], {})
      assert.deepEqual([r.code, r.stdout, r.stderr], [0, `${version}\n`, ''])
    }
  })

  it('the server started from another directory, DATABASE_URL unset, keeps its store in the project\'s data/', async (t) => {
    const { root } = installedCopy(t)
    const child = spawn(process.execPath, [join(root, 'dist', 'server.js')], {
      cwd: tempDir(t),
      env: childEnv({ PORT: '0', HOST: '127.0.0.1', LOG_FORMAT: 'json' }),
      stdio: ['ignore', 'pipe', 'pipe']
    })
    onCleanup(t, () => { child.kill('SIGKILL') })
    let out = ''
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        const m = /"msg":"store: SQLite ([^"]+)"/.exec(out)
        if (m !== null) resolve(m[1]!)
      })
      child.once('exit', (code) => { reject(new Error(`the server exited ${String(code)} before naming its store: ${out}`)) })
    })
    assert.equal(line, join(root, 'data', 'petstore.db'))
    assert.equal(existsSync(join(root, 'dist', 'data')), false)
  })

  it('from another directory, uses the project database and refuses to create a new one', async (t) => {
    const { root, cli } = installedCopy(t)
    const db = join(root, 'data', 'petstore.db')
    const src = join(root, 'src')
    mkdirSync(src)
    const elsewhere = tempDir(t)

    // `cd src && npx petstore keys create --name x` on a fresh clone: no database yet, none made.
    const refused = await runCli(['keys', 'create', '--name', 'x'], {}, undefined, { cwd: src, cli })
    assert.equal(refused.code, 1, refused.stderr)
    assert.equal(refused.stdout, '')
    assert.match(refused.stderr, new RegExp(`^petstore: store: SQLite ${db}\\npetstore: no database at ${db} \\(DATABASE_URL is unset: the default is data/petstore.db in the project directory ${root}\\); .*--create`))
    assert.equal(existsSync(db), false)

    // migrate (as the server's first start would) creates it, from any directory.
    const migrated = await runCli(['migrate'], {}, undefined, { cwd: src, cli })
    assert.equal(migrated.code, 0, migrated.stderr)
    assert.match(migrated.stderr, new RegExp(`^petstore: store: SQLite ${db}\\napplied migrations: `))
    assert.ok(existsSync(db))

    // A key made in one directory is listed from another: the same database.
    const made = await runCli(['keys', 'create', '--name', 'from-src'], {}, undefined, { cwd: src, cli })
    assert.equal(made.code, 0, made.stderr)
    assert.match(made.stdout, /^psk_[A-Za-z0-9_-]{43}\n$/)
    const listed = await runCli(['keys', 'list'], {}, undefined, { cwd: elsewhere, cli })
    assert.equal(listed.code, 0, listed.stderr)
    assert.equal(listed.stderr, `petstore: store: SQLite ${db}\n`)
    assert.deepEqual(listed.stdout.trimEnd().split('\n').map(l => l.split('\t')[1]), ['from-src'])
    assert.equal(existsSync(join(src, 'data')), false)
    assert.equal(existsSync(join(elsewhere, 'data')), false)
  })

  it('resolves a relative DATABASE_URL against the working directory, and creates it only with --create', async (t) => {
    const dir = tempDir(t)
    const env = { DATABASE_URL: 'sqlite:data/other.db' }
    const path = join(dir, 'data', 'other.db')
    for (const args of [['keys', 'list'], ['keys', 'revoke', '1'], ['keys', 'create', '--name', 'x']]) {
      const r = await runCli(args, env, undefined, { cwd: dir })
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, new RegExp(`no database at ${path} \\(from DATABASE_URL; a relative path is relative to the working directory ${dir}\\)`))
      assert.equal(existsSync(path), false, args.join(' '))
    }
    const created = await runCli(['keys', 'create', '--name', 'x', '--create'], env, undefined, { cwd: dir })
    assert.equal(created.code, 0, created.stderr)
    assert.match(created.stderr, new RegExp(`^petstore: store: SQLite ${path}\\ncreated key 1 \\(x\\)`))
    assert.ok(existsSync(path))
  })

  it('export and backup of a store that cannot be reached leave no file behind, partial or whole', async (t) => {
    const dir = tempDir(t)
    // Port 1: nothing listens there, so the connection is refused at once.
    const env = { DATABASE_URL: 'postgres://u@127.0.0.1:1/db' }
    for (const args of [['export', '--out', join(dir, 'e.ndjson')], ['backup', join(dir, 'b.ndjson')]]) {
      const r = await runCli(args, env)
      assert.equal(r.code, 1, `${args[0]!}: ${r.stderr}`)
      assert.match(r.stderr, /^petstore: PostgreSQL at 127\.0\.0\.1:1 .*connection refused/m, args[0])
      assert.deepEqual(readdirSync(dir), [], args[0])
    }
  })

  it('export, backup and copy read only a database that exists; import and copy never make one where a store was lost', async (t) => {
    const dir = tempDir(t)
    const missing = join(dir, 'typo.db')
    const env = { DATABASE_URL: `sqlite:${missing}` }
    for (const args of [['export', '--out', join(dir, 'e.ndjson')], ['backup', join(dir, 'b.db')], ['copy', '--to', `sqlite:${join(dir, 'c.db')}`]]) {
      const r = await runCli(args, env)
      assert.equal(r.code, 1, `${args[0]!}: ${r.stderr}`)
      assert.match(r.stderr, new RegExp(`^petstore: no database at ${missing} \\(from DATABASE_URL; a relative path is relative to the working directory .*\\); set DATABASE_URL to the database the server uses$`, 'm'), args[0])
      assert.equal(existsSync(missing), false, `${args[0]!} made the database`)
    }
    assert.deepEqual(['e.ndjson', 'b.db', 'c.db'].filter(f => existsSync(join(dir, f))), [])
    // An empty file is no database either (SQLite would make one of it): refused, left empty.
    const empty = join(dir, 'empty.db')
    writeFileSync(empty, '')
    const fromEmpty = await runCli(['export', '--out', join(dir, 'e.ndjson')], { DATABASE_URL: `sqlite:${empty}` })
    assert.equal(fromEmpty.code, 1, fromEmpty.stderr)
    assert.match(fromEmpty.stderr, new RegExp(`^petstore: no database at ${empty} \\(an empty file; from DATABASE_URL`, 'm'))
    assert.equal(readFileSync(empty).length, 0)

    // A store made and exported, then its database removed: its marker stays, and refuses an import
    // (or a copy) into that path until deleted, as it refuses a server start there.
    const lost = join(dir, 'lost.db')
    const lostEnv = { DATABASE_URL: `sqlite:${lost}` }
    assert.equal((await runCli(['keys', 'create', '--name', 'x', '--create'], lostEnv)).code, 0)
    const exported = join(dir, 'lost.ndjson')
    assert.equal((await runCli(['export', '--out', exported], lostEnv)).code, 0)
    for (const f of [lost, `${lost}-wal`, `${lost}-shm`]) rmSync(f, { force: true })
    const imported = await runCli(['import', exported], lostEnv)
    assert.equal(imported.code, 1, imported.stderr)
    assert.match(imported.stderr, new RegExp(`says store \\d+ was created there: its pets and keys are gone \\(removed or moved\\)\\. Put the database back \\(restore a backup\\), or, to load this data there in its place, delete ${lost}\\.store-id and run the command again`))
    const otherEnv = { DATABASE_URL: `sqlite:${join(dir, 'other.db')}` }
    assert.equal((await runCli(['keys', 'list', '--create'], otherEnv)).code, 0)
    const copied = await runCli(['copy', '--to', `sqlite:${lost}`], otherEnv)
    assert.equal(copied.code, 1, copied.stderr)
    assert.match(copied.stderr, new RegExp(`delete ${lost}\\.store-id and run the command again`))
    assert.equal(existsSync(lost), false)
    rmSync(`${lost}.store-id`)
    // A load that fails leaves no database behind at a new path.
    const bad = join(dir, 'bad.ndjson')
    writeFileSync(bad, 'not an export\n')
    const failed = await runCli(['import', bad], lostEnv)
    assert.equal(failed.code, 1, failed.stderr)
    assert.equal(existsSync(lost), false, 'a failed import left a database')
    const restored = await runCli(['import', exported], lostEnv)
    assert.equal(restored.code, 0, restored.stderr)
    assert.match(restored.stderr, /imported 0 pets, 1 API keys/)
  })

  it('exit codes: a blank --name is a usage error (2), revoking a revoked key is nothing to do (3)', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${path}` }
    for (const name of ['   ', '', '\t']) {
      const r = await runCli(['keys', 'create', '--name', name, '--create'], env)
      assert.equal(r.code, 2, `${JSON.stringify(name)}: ${r.stderr}`)
      assert.match(r.stderr, /^petstore: error: .*NAME must be 1 to 100 characters, not only spaces\nRun 'petstore keys create --help' for usage\.\n$/)
      assert.equal(r.stdout, '')
    }
    assert.equal(existsSync(path), false, 'a usage error touched no store')

    assert.equal((await runCli(['keys', 'create', '--name', 'k', '--create'], env)).code, 0)
    const first = await runCli(['keys', 'revoke', '1'], env)
    assert.equal(first.code, 0, first.stderr)
    const revokedAt = (new Database(path, { readonly: true }).prepare('SELECT revoked_at FROM api_keys WHERE id = 1').get() as { revoked_at: string }).revoked_at
    const again = await runCli(['keys', 'revoke', '1'], env)
    assert.equal(again.code, 3, again.stderr)
    assert.match(again.stderr, new RegExp(`key 1 \\(k\\) was already revoked at ${revokedAt.replace(/\./g, '\\.')}; nothing to do`))
    assert.equal(again.stdout, '')
    const unknown = await runCli(['keys', 'revoke', '9'], env)
    assert.equal(unknown.code, 1, unknown.stderr)
  })

  it('lists keys as an aligned table on a terminal, plain under NO_COLOR, tab-separated when piped', async (t) => {
    const dir = tempDir(t)
    const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
    assert.equal((await runCli(['keys', 'create', '--name', 'a', '--create'], env)).code, 0)
    assert.equal((await runCli(['keys', 'create', '--name', 'a much longer name'], env)).code, 0)

    const errFile = join(dir, 'stderr')
    const tty = await runInTerminal([join(ROOT, 'dist', 'cli', 'index.js'), 'keys', 'list'], { ...env, NO_COLOR: '1' }, { stderrFile: errFile })
    assert.equal(tty.code, 0, tty.output)
    const lines = tty.output.split('\r\n').filter(l => l !== '')
    // Aligned columns two spaces apart: the header row first, a row per key.
    assert.match(lines[0]!, /^id {2}name {16}state {3}works until {2}last used {2}scopes$/)
    assert.match(lines[1]!, /^1 {3}a {19}active {2}- {12}- {10}all$/)
    assert.match(lines[2]!, /^2 {3}a much longer name {2}active {2}- /)
    assert.equal(tty.output.includes('\u001b['), false, 'no colour under NO_COLOR')
    assert.equal(readFileSync(errFile, 'utf8'), `petstore: store: SQLite ${join(dir, 'petstore.db')}\n`)

    const coloured = await runInTerminal([join(ROOT, 'dist', 'cli', 'index.js'), 'keys', 'list'], env, { stderrFile: errFile })
    assert.ok(coloured.output.includes('\u001b[1mid\u001b[22m'), 'a bold header on a terminal')

    const piped = await runCli(['keys', 'list'], env)
    assert.deepEqual(piped.stdout.trimEnd().split('\n').map(l => l.split('\t').slice(0, 2)), [['1', 'a'], ['2', 'a much longer name']])
  })
})
