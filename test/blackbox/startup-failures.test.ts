// requires: postgresql, chattr
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { startCluster } from '../../scripts/pg-cluster.mjs'
import { tempDir } from '../helpers/app.js'
import { runCli, runServerToExit, type CliResult } from '../helpers/process.js'
import { onCleanup } from '../helpers/cleanup.js'
import { freePort } from '../helpers/server.js'

/** The whole contract of a start-up failure: exit 1, exactly one line on stderr, no stack anywhere. */
function assertOneLine (r: CliResult, pattern: RegExp): string {
  assert.equal(r.code, 1, `exit code; stderr: ${r.stderr}`)
  assert.match(r.stderr, /^petstore: cannot start: [^\n]+\n$/, `one line on stderr: ${JSON.stringify(r.stderr)}`)
  assert.match(r.stderr, pattern)
  assert.doesNotMatch(r.stdout + r.stderr, /\n\s+at |Error: |node:internal/, 'no stack trace or raw error')
  return r.stderr
}

const isRoot = process.getuid?.() === 0

/**
 * A directory this process cannot write into. As root (CI) mode bits do not stop us, so the
 * directory is made immutable (chattr +i: even root gets EPERM); otherwise it is made read-only.
 */
function unwritableDir (t: TestContext): string {
  const base = mkdtempSync(join(tmpdir(), 'petstore-test-'))
  const dir = join(base, 'locked')
  mkdirSync(dir)
  // One teardown, in order: lift the lock, then remove.
  onCleanup(t, () => {
    if (isRoot) spawnSync('chattr', ['-i', dir])
    else chmodSync(dir, 0o755)
    rmSync(base, { recursive: true, force: true })
  })
  if (isRoot) execFileSync('chattr', ['+i', dir])
  else chmodSync(dir, 0o555)
  return dir
}

describe('start-up failures: one line with the cause and the setting, exit 1 (black box)', () => {
  it('PostgreSQL refusing the password, then PostgreSQL down: names host:port and DATABASE_URL, never the password', async (t) => {
    // A cluster of our own whose TCP logins need a password (the shared test cluster trusts them).
    const cluster = await startCluster({ password: 'right-horse-battery' })
    onCleanup(t, () => cluster.destroy())
    const good = new URL(cluster.url)
    const wrong = new URL(cluster.url)
    wrong.password = 'wrong-staple-42'
    const where = `127\\.0\\.0\\.1:${cluster.port}`

    // The right password works, so the refusal below is about the password alone.
    const migrated = await runCli(['migrate'], { DATABASE_URL: good.href })
    assert.equal(migrated.code, 0, migrated.stderr)

    for (const run of [() => runServerToExit({ DATABASE_URL: wrong.href, PORT: '0' }), () => runCli(['serve'], { DATABASE_URL: wrong.href, PORT: '0' })]) {
      const r = await run()
      const line = assertOneLine(r, new RegExp(`^petstore: cannot start: PostgreSQL at ${where} \\(database "postgres", user "postgres"\\): FATAL 28P01 password authentication failed for user "postgres"; check the user and password in DATABASE_URL`))
      assert.equal((r.stdout + line).includes('wrong-staple-42'), false, 'the password was printed')
    }

    await cluster.stop()
    const down = await runServerToExit({ DATABASE_URL: wrong.href, PORT: '0', PG_CONNECT_TIMEOUT_MS: '5000' })
    const line = assertOneLine(down, new RegExp(`^petstore: cannot start: PostgreSQL at ${where} \\(database "postgres", user "postgres"\\): connection refused \\(ECONNREFUSED\\); check the host and port in DATABASE_URL, and that PostgreSQL \\(or the pooler\\) is running there\\n$`))
    assert.equal(line.includes('wrong-staple-42'), false)
  })

  it('PostgreSQL at an address where nothing listens', async () => {
    const port = await freePort()
    const r = await runServerToExit({ DATABASE_URL: `postgres://app:s3cr3t@127.0.0.1:${port}/petstore`, PORT: '0' })
    assertOneLine(r, new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${port} \\(database "petstore", user "app"\\): connection refused \\(ECONNREFUSED\\); check the host and port in DATABASE_URL`))
    assert.equal(r.stderr.includes('s3cr3t'), false)
  })

  it('any password, even one that is a word of the line, leaves the line word for word (server and CLI)', async () => {
    const port = await freePort()
    // The password is left out of the URL before anything is said, never cut out of what was said:
    // a password that is a letter, a word of the message or the database's own name changes nothing.
    for (const password of ['e', 'p', 'petstore', 'refused', '%25']) {
      const url = `postgres://petstore:${password}@127.0.0.1:${port}/petstore`
      const expected = `PostgreSQL at 127.0.0.1:${port} (database "petstore", user "petstore"): connection refused (ECONNREFUSED); check the host and port in DATABASE_URL, and that PostgreSQL (or the pooler) is running there`
      const served = await runServerToExit({ DATABASE_URL: url, PORT: '0' })
      assert.equal(assertOneLine(served, /./), `petstore: cannot start: ${expected}\n`, `password ${password}`)
      const migrated = await runCli(['migrate'], { DATABASE_URL: url })
      assert.equal(migrated.code, 1)
      assert.equal(migrated.stderr.includes(expected), true, `password ${password}: ${migrated.stderr}`)
    }
  })

  it('a data directory it may not write: names the path and DATABASE_URL', async (t) => {
    const dir = unwritableDir(t)
    const code = isRoot ? 'EPERM' : 'EACCES'
    // The database's directory is missing and cannot be made…
    const mkdir = await runServerToExit({ DATABASE_URL: `sqlite:${join(dir, 'data', 'petstore.db')}`, PORT: '0' })
    assertOneLine(mkdir, new RegExp(`^petstore: cannot start: permission denied: cannot create the directory ${join(dir, 'data')} \\(${code}\\); make its directory writable by this user, or point DATABASE_URL elsewhere\\n$`))
    // …or it exists and the database file cannot be created in it (the store creates it itself, 0600).
    const open = await runServerToExit({ DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, PORT: '0' })
    assertOneLine(open, new RegExp(`^petstore: cannot start: permission denied: cannot open ${join(dir, 'petstore.db')} \\(${code}\\); make its directory writable by this user, or point DATABASE_URL elsewhere\\n$`))
    assert.equal(existsSync(join(dir, 'data')), false)
  })

  it('a first-key file it may not write: names FIRST_KEY_FILE, and no key is made', async (t) => {
    const dir = unwritableDir(t)
    const code = isRoot ? 'EPERM' : 'EACCES'
    const path = join(tempDir(t), 'petstore.db')
    const keyFile = join(dir, 'first-api-key.txt')
    const r = await runServerToExit({ DATABASE_URL: `sqlite:${path}`, PORT: '0', FIRST_KEY_FILE: keyFile })
    assertOneLine(r, new RegExp(`^petstore: cannot start: cannot write the first API key to ${keyFile} \\(${code}\\); set FIRST_KEY_FILE to a writable path, or make a key first with petstore keys create --name NAME --create\\n$`))
    assert.doesNotMatch(r.stdout + r.stderr, /psk_/)
    const listed = await runCli(['keys', 'list', '--json'], { DATABASE_URL: `sqlite:${path}` })
    assert.deepEqual([listed.code, JSON.parse(listed.stdout)], [0, []], 'a key nobody saw was made')
  })

  it('a port in use: names HOST:PORT and PORT', async (t) => {
    const taken = createServer().listen(0, '127.0.0.1')
    await once(taken, 'listening')
    onCleanup(t, () => taken.close())
    const port = (taken.address() as AddressInfo).port
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, HOST: '127.0.0.1', PORT: String(port) }
    for (const r of [await runServerToExit(env), await runCli(['serve'], env)]) {
      assertOneLine(r, new RegExp(`^petstore: cannot start: cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use \\(EADDRINUSE\\); set PORT to a free port, or stop the process using it\\n$`))
    }
  })

  it('a bad setting: names it and lists the allowed values', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
    const r = await runServerToExit({ ...env, LOG_LEVEL: 'verbose' })
    assertOneLine(r, /^petstore: cannot start: invalid configuration: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent \(got 'verbose'\)\n$/)
    const serve = await runCli(['serve'], { ...env, LOG_FORMAT: 'fancy' })
    assertOneLine(serve, /^petstore: cannot start: invalid configuration: LOG_FORMAT: must be one of auto, json, pretty \(got 'fancy'\)\n$/)
    assert.equal(existsSync(env.DATABASE_URL.slice('sqlite:'.length)), false, 'nothing was created')
  })
})
