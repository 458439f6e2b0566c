// requires: postgresql, pgbouncer
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import pg from 'pg'
import { loadConfig } from '../../src/config/index.js'
import { startCluster } from '../../scripts/pg-cluster.mjs'
import { asPostgresUser, postgresOwner } from '../../scripts/lib/local.mjs'
import { findPgBouncer } from '../../scripts/pgbouncer.mjs'
import { createTestDatabase, tempDir, testClusterUrl } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'
import { type CodeBlock, codeBlocks } from '../helpers/markdown.js'
import { killAtExit } from '../helpers/exit-watch.js'
import { childEnv, ROOT } from '../helpers/process.js'
import { freePort } from '../helpers/server.js'

/*
 * The shell blocks of docs/tutorial.md and docs/how-to/*.md, run as a reader would: in order, in one
 * bash session (set -euo pipefail), from a project folder, against the build. A block's fence says
 * what it is: `sh run` is run, `sh run-background` is started and left running (the next block runs
 * once the server it starts answers /readyz; it gets SIGTERM at the end), `sh example` is shown
 * only. Every shell block must say one of them.
 *
 * The commands run in the project folder, as the docs say (npx finds `petstore` there). The
 * docs' addresses are the usual ones; the run substitutes its own: 127.0.0.1:8080 → a free port,
 * 127.0.0.1:5432 → the test cluster. The store is the one DATABASE_URL names (the docs rely on the
 * default; the test sets it), on SQLite or PostgreSQL.
 */

const DOCS = join(ROOT, 'docs')
const SHELL = new Set(['sh', 'bash', 'shell'])
const KINDS = new Set(['run', 'run-background', 'example'])
/** What the runnable blocks write into the project folder. */
const DOC_WRITTEN = ['backups/first.db', 'backups/petstore-before-move.db', 'backups/petstore-nightly.db', 'backups/petstore-nightly.ndjson', 'backups/restored']
/** How-tos with a test of their own below; every other how-to's `run` blocks are run as they are. */
const OWN_TEST = new Set(['postgresql.md', 'pgbouncer.md'])

type Block = CodeBlock

/** The blocks that name a language (a bare fence is plain text). */
const blocks = (file: string): Block[] => codeBlocks(file).filter(b => b.lang !== '')

const howTos = (): string[] => readdirSync(join(DOCS, 'how-to')).filter(f => f.endsWith('.md')).map(f => join(DOCS, 'how-to', f))
const shellBlocks = (file: string): Block[] => blocks(file).filter(b => SHELL.has(b.lang))

/**
 * The project folder, where a reader runs the commands, and a scratch folder for what the test keeps
 * apart (logs, the store). The files the docs write into the project folder (backups/, ignored by
 * git) are removed when the test ends.
 */
function projectFolder (t: TestContext): string {
  onCleanup(t, () => {
    for (const file of DOC_WRITTEN) rmSync(join(ROOT, file), { force: true, recursive: true })
    try {
      rmdirSync(join(ROOT, 'backups'))
    } catch {} // not empty: files of the reader's own
  })
  return tempDir(t, 'petstore-docs-')
}

/** The bash script of a page's blocks: `run` blocks as they are, `run-background` ones in the background until /readyz answers. */
function script (list: Block[], port: number, pgHostPort: string | undefined): string {
  // eslint-disable-next-line no-template-curly-in-string -- bash, not a template
  const lines = ['set -euo pipefail', 'background=()', "trap 'for p in \"${background[@]}\"; do kill -TERM -- \"-$p\" 2>/dev/null || true; done; wait' EXIT", 'set -m']
  for (const b of list) {
    let text = b.text.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`)
    if (pgHostPort !== undefined) text = text.replaceAll('127.0.0.1:5432', pgHostPort)
    lines.push(`echo '--- ${b.file.slice(ROOT.length)}:${b.line}' >&2`)
    if (b.kind === 'run') {
      lines.push(text)
    } else {
      // Its own process group (set -m), so SIGTERM reaches npm and the server it starts.
      lines.push(`( ${text} ) > "$LOG_DIR/background-${b.line}.log" 2>&1 &`, 'background+=($!)')
      lines.push(`for i in $(seq 1 200); do curl -sf -o /dev/null http://127.0.0.1:${port}/readyz && break; sleep 0.1; done`)
      lines.push(`curl -sf -o /dev/null http://127.0.0.1:${port}/readyz || { cat "$LOG_DIR"/background-*.log >&2; exit 1; }`)
    }
  }
  return lines.join('\n') + '\n'
}

async function runBash (t: TestContext, scratch: string, text: string, env: Record<string, string>): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const file = join(scratch, `blocks-${Date.now()}.sh`)
  writeFileSync(file, text)
  const child = spawn('bash', [file], { cwd: ROOT, env: childEnv({ ...env, LOG_DIR: scratch }), stdio: ['ignore', 'pipe', 'pipe'] })
  killAtExit(child)
  onCleanup(t, () => { if (child.exitCode === null) child.kill('SIGKILL') })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const code = await new Promise<number | null>(resolve => child.once('close', resolve))
  return { code, stdout, stderr }
}

/** A fresh database of the test cluster, or a SQLite file in `dir`. */
async function storeUrl (t: TestContext, store: 'sqlite' | 'postgres', dir: string): Promise<string> {
  return store === 'sqlite' ? `sqlite:${join(dir, 'data', 'petstore.db')}` : await createTestDatabase(t)
}

describe('the shell blocks of the tutorial and the how-tos', () => {
  it('are each marked run, run-background or example', () => {
    for (const file of [join(DOCS, 'tutorial.md'), ...howTos()]) {
      for (const b of shellBlocks(file)) {
        assert.ok(KINDS.has(b.kind), `${b.file.slice(ROOT.length)}:${b.line}: a \`${b.lang}\` block must be marked run, run-background or example (got '${b.kind}')`)
      }
    }
  })

  for (const store of ['sqlite', 'postgres'] as const) {
    it(`docs/tutorial.md runs from start to end on ${store}`, { timeout: 180_000 }, async (t) => {
      const dir = projectFolder(t)
      const port = await freePort()
      const list = shellBlocks(join(DOCS, 'tutorial.md')).filter(b => b.kind !== 'example')
      assert.ok(list.some(b => b.kind === 'run-background'), 'the tutorial starts a server')
      const env = { DATABASE_URL: await storeUrl(t, store, dir), PORT: String(port), FIRST_KEY_FILE: join(dir, 'first-api-key.txt') }
      const r = await runBash(t, dir, script(list, port, undefined), env)
      assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`)
      // What the tutorial promises along the way.
      assert.match(r.stdout, /"name":"Rex","categoryId":3,"status":"pending"/)
      assert.match(r.stdout, /^link: <\/v1\/pets\?limit=2&cursor=[^>]+>; rel="next"/im)
      assert.match(r.stdout, /^deprecation: @\d+/im)
      assert.match(r.stdout, /"code":"validation_failed"/)
      const replays = r.stdout.match(/"name":"Oscar"[^}]*}/g) ?? []
      assert.equal(replays.length, 2)
      assert.equal(replays[0], replays[1], 'the retried create answered the same pet')
    })
  }

  for (const file of howTos().filter(f => !OWN_TEST.has(f.split('/').pop()!))) {
    for (const store of ['sqlite', 'postgres'] as const) {
      const list = shellBlocks(file).filter(b => b.kind !== 'example')
      if (list.length === 0) continue
      it(`${file.slice(ROOT.length)} runs on ${store}, on a store holding a key`, { timeout: 180_000 }, async (t) => {
        const dir = projectFolder(t)
        const port = await freePort()
        const env = { DATABASE_URL: await storeUrl(t, store, dir), PORT: String(port), FIRST_KEY_FILE: join(dir, 'first-api-key.txt') }
        const r = await runBash(t, dir, 'set -euo pipefail\nbin/petstore keys create --name reader --create > /dev/null\n' + script(list, port, undefined), env)
        assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`)
      })
    }
  }

  it('docs/how-to/postgresql.md moves a SQLite store with data into a new role\'s database', { timeout: 180_000 }, async (t) => {
    const dir = projectFolder(t)
    const port = await freePort()
    const admin = testClusterUrl()
    const cluster = new URL(admin)
    const sqlite = `sqlite:${join(dir, 'data', 'petstore.db')}`
    // The store a team starts with: a key and a pet.
    const seed = await runBash(t, dir, `set -euo pipefail
KEY=$(bin/petstore keys create --name before --create)
echo "$KEY"
`, { DATABASE_URL: sqlite })
    assert.equal(seed.code, 0, seed.stderr)
    const client = new pg.Client({ connectionString: admin })
    await client.connect()
    onCleanup(t, async () => {
      try {
        await client.query('DROP DATABASE IF EXISTS petstore WITH (FORCE)')
        await client.query('DROP ROLE IF EXISTS petstore')
      } finally {
        await client.end()
      }
    })
    const list = shellBlocks(join(DOCS, 'how-to', 'postgresql.md')).filter(b => b.kind !== 'example')
    const r = await runBash(t, dir, script(list, port, `${cluster.hostname}:${cluster.port}`) + `
curl -sS --fail-with-body http://127.0.0.1:${port}/v1/pets -H "Authorization: Bearer ${seed.stdout.trim()}"
`, { DATABASE_URL: sqlite, PORT: String(port), PG_ADMIN_URL: admin, FIRST_KEY_FILE: join(dir, 'first-api-key.txt') })
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`)
    assert.match(r.stdout, /"status":"ok"/)
    assert.match(r.stdout.trim(), /\[\]$/, 'the key made on SQLite authenticates on PostgreSQL')
    const owner = await client.query("SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = 'petstore'")
    assert.equal(owner.rows[0]?.owner, 'petstore')
  })

  it('docs/how-to/pgbouncer.md: PgBouncer runs on its pgbouncer.ini, and every command of the page works as written', { timeout: 180_000 }, async (t) => {
    const page = join(DOCS, 'how-to', 'pgbouncer.md')
    const ini = blocks(page).find(b => b.lang === 'ini')
    assert.ok(ini !== undefined, 'the how-to has a pgbouncer.ini')
    const setting = (key: string): string => new RegExp(`^${key} = (.+)$`, 'm').exec(ini.text)![1]!
    assert.equal(setting('pool_mode'), 'transaction')
    assert.equal(setting('admin_users'), 'pgbouncer')
    assert.equal(setting('stats_users'), 'pgbouncer_stats')
    // What behaviour.md asks of a pooler: a statement still queued is refused before the service's own
    // bound (PG_STATEMENT_TIMEOUT_MS + 1 s, at its default) gives up on it.
    assert.ok(Number(setting('query_wait_timeout')) * 1000 < loadConfig({}).pgStatementTimeoutMs + 1000, `query_wait_timeout = ${setting('query_wait_timeout')}`)
    // PostgreSQL as the page assumes it (postgresql.md's role and database, SCRAM logins), in a
    // cluster of this test's own, the role made with the page's password.
    const password = /postgres:\/\/petstore:([^@]+)@127\.0\.0\.1:6432\/petstore/.exec(readFileSync(page, 'utf8'))![1]!
    const cluster = await startCluster({ password: 'admin-secret' })
    onCleanup(t, () => cluster.destroy())
    const admin = new pg.Client({ connectionString: cluster.url })
    await admin.connect()
    let secret: string
    try {
      await admin.query(`CREATE ROLE petstore LOGIN PASSWORD '${password}'`)
      await admin.query('CREATE DATABASE petstore OWNER petstore')
      secret = (await admin.query<{ rolpassword: string }>("SELECT rolpassword FROM pg_authid WHERE rolname = 'petstore'")).rows[0]!.rolpassword
    } finally {
      await admin.end()
    }
    assert.match(secret, /^SCRAM-SHA-256\$/)
    // userlist.txt as the page describes it: the role's SCRAM secret, PgBouncer's own two users.
    const dir = tempDir(t, 'petstore-pgbouncer-howto-')
    const sockets = join(dir, 'run')
    mkdirSync(sockets)
    writeFileSync(join(dir, 'userlist.txt'), `"petstore" "${secret}"\n"pgbouncer" "console-secret"\n"pgbouncer_stats" "stats-secret"\n`, { mode: 0o600 })
    // The reader's ~/.pgpass, for the console's passwords.
    writeFileSync(join(dir, 'pgpass'), '*:*:pgbouncer:pgbouncer:console-secret\n*:*:pgbouncer:pgbouncer_stats:stats-secret\n', { mode: 0o600 })
    // The page's file with this machine's addresses: the cluster's port, a free port for 6432, a
    // socket folder and userlist of the test's own.
    const port = await freePort()
    const bouncerPort = await freePort()
    const text = ini.text
      .replace('host=127.0.0.1 port=5432 ', `host=127.0.0.1 port=${cluster.port} `)
      .replace(/^listen_port = 6432$/m, `listen_port = ${bouncerPort}`)
      .replace(/^unix_socket_dir = \/var\/run\/postgresql$/m, `unix_socket_dir = ${sockets}`)
      .replace(/^auth_file = \/etc\/pgbouncer\/userlist\.txt$/m, `auth_file = ${join(dir, 'userlist.txt')}`)
    for (const [from, key] of [[`port=${cluster.port} `, 'databases'], [String(bouncerPort), 'listen_port'], [sockets, 'unix_socket_dir'], [dir, 'auth_file']] as const) assert.ok(text.includes(from), `${key} substituted`)
    writeFileSync(join(dir, 'pgbouncer.ini'), text)
    const owner = postgresOwner()
    if (owner !== undefined) for (const f of ['', 'run', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, f), owner.uid, owner.gid)
    const [cmd, argv] = asPostgresUser(findPgBouncer(), [join(dir, 'pgbouncer.ini')])
    const bouncer = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] })
    killAtExit(bouncer)
    let bouncerLog = ''
    bouncer.stderr.on('data', (d: Buffer) => { bouncerLog += d.toString() })
    const bouncerExited = new Promise(resolve => bouncer.once('exit', resolve))
    onCleanup(t, async () => {
      // PgBouncer itself (as root, runuser's child): SIGTERM, immediate shutdown.
      if (bouncer.exitCode !== null || bouncer.signalCode !== null) return
      let pids = [bouncer.pid!]
      try {
        if (owner !== undefined) pids = readFileSync(`/proc/${bouncer.pid}/task/${bouncer.pid}/children`, 'utf8').trim().split(/\s+/).map(Number)
      } catch {}
      for (const pid of pids) { try { process.kill(pid, 'SIGTERM') } catch {} }
      await bouncerExited
    })
    for (let i = 0; i < 100 && !existsSync(join(sockets, `.s.PGSQL.${bouncerPort}`)); i++) {
      assert.equal(bouncer.exitCode, null, `PgBouncer ended: ${bouncerLog}`)
      await new Promise(resolve => setTimeout(resolve, 100))
    }

    const list = shellBlocks(page).filter(b => b.kind !== 'example').map(b => ({ ...b, text: b.text.replaceAll('6432', String(bouncerPort)) }))
    assert.deepEqual(list.map(b => b.kind), ['run', 'run-background', 'run'])
    const r = await runBash(t, dir, script(list, port, undefined) + `
curl -sS --fail-with-body http://127.0.0.1:${port}/readyz
psql -p ${bouncerPort} -U pgbouncer_stats pgbouncer -c 'PAUSE;' && exit 9 || true
`, { PORT: String(port), FIRST_KEY_FILE: join(dir, 'first-api-key.txt'), PGHOST: sockets, PGPASSFILE: join(dir, 'pgpass') })
    assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}\n${bouncerLog}`)
    assert.match(r.stderr, /store: PostgreSQL database/)
    // SHOW POOLS: the service's pool on the petstore database, as the petstore user.
    assert.match(r.stdout, /^\s*petstore\s*\|\s*petstore\s*\|/m)
    assert.match(r.stdout, /total_xact_count/)
    assert.match(r.stdout, /"status":"ok"/)
    // The stats user may look, not act.
    assert.match(r.stderr, /admin access needed/)
  })
})
