/*
 * bin/petstore, the documented form of the CLI, in a pruned production install (`npm prune
 * --omit=dev`, as deploy.md's systemd path does): it answers at once, builds and installs nothing,
 * and the server's first-key hint names a command that works there. The install is a copy of this
 * checkout (its files, dist/, and node_modules hard-linked, which the prune then thins).
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { tmpdir } from 'node:os'
import { after, before, describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { childEnv, ROOT, startServer, waitForOutput } from '../helpers/process.js'

/** PATH as an operator's shell has it: nothing of the project's node_modules/.bin. */
const HOST_PATH = (process.env.PATH ?? '').split(':').filter(d => !d.includes('node_modules')).join(':')

interface Run { code: number | null, stdout: string, stderr: string, ms: number }

function run (command: string, args: string[], opts: { cwd: string, env?: Record<string, string> }): Promise<Run> {
  const started = performance.now()
  return new Promise(resolve => {
    execFile(command, args, { cwd: opts.cwd, env: childEnv({ PATH: HOST_PATH, ...opts.env }), timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null
      resolve({ code, stdout, stderr, ms: performance.now() - started })
    })
  })
}

/** A production install made from this checkout: its tracked (and new) files, dist/, node_modules, then `npm prune --omit=dev`. */
function prunedInstall (dir: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  for (const f of files.split('\0').filter(f => f !== '' && existsSync(join(ROOT, f)))) {
    mkdirSync(dirname(join(dir, f)), { recursive: true })
    copyFileSync(join(ROOT, f), join(dir, f))
  }
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true })
  // Hard links: the prune unlinks the copy's entries, never the checkout's files. npm rewrites its
  // lock file in place, so that one is a real copy.
  execFileSync('cp', ['-al', join(ROOT, 'node_modules'), join(dir, 'node_modules')])
  unlinkSync(join(dir, 'node_modules/.package-lock.json'))
  copyFileSync(join(ROOT, 'node_modules/.package-lock.json'), join(dir, 'node_modules/.package-lock.json'))
  execFileSync('npm', ['prune', '--omit=dev', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'pipe' })
}

describe('bin/petstore in a pruned production install (black box)', () => {
  let install = ''
  before(() => {
    install = mkdtempSync(join(tmpdir(), 'petstore-pruned-'))
    prunedInstall(install)
  })
  after(() => rmSync(install, { recursive: true, force: true }))

  it('the install is pruned: no TypeScript, no build tool', () => {
    assert.equal(existsSync(join(install, 'node_modules/typescript')), false)
    assert.equal(existsSync(join(install, 'node_modules/tsx')), false)
    assert.equal(existsSync(join(install, 'node_modules/better-sqlite3')), true)
  })

  it('--help and keys create answer within 3 s each, exit 0, with no build', async (t) => {
    const distBefore = readFileSync(join(install, 'dist/cli/index.js'), 'utf8')
    // A real install's build fills Node's compile cache for its own path; this copy's path is new.
    assert.equal((await run(join(install, 'bin/petstore'), ['--version'], { cwd: install })).code, 0)
    const help = await run(join(install, 'bin/petstore'), ['--help'], { cwd: install })
    assert.equal(help.code, 0, help.stderr)
    assert.match(help.stdout, /^Usage: petstore /)
    const db = join(tempDir(t), 'petstore.db')
    const made = await run('bin/petstore', ['keys', 'create', '--name', 'me', '--create'], { cwd: install, env: { DATABASE_URL: `sqlite:${db}` } })
    assert.equal(made.code, 0, made.stderr)
    assert.match(made.stdout, /^psk_[A-Za-z0-9_-]{43}\n$/)
    assert.match(made.stderr, new RegExp(`store: SQLite ${db}`))
    for (const r of [help, made]) assert.ok(r.ms < 3000, `took ${Math.round(r.ms)} ms`)
    assert.equal(readFileSync(join(install, 'dist/cli/index.js'), 'utf8'), distBefore, 'dist/ was rebuilt')
  })

  it('runs through a symlink elsewhere (ln -s …/bin/petstore /usr/local/bin/)', async (t) => {
    const elsewhere = tempDir(t)
    symlinkSync(join(install, 'bin/petstore'), join(elsewhere, 'petstore'))
    const r = await run(join(elsewhere, 'petstore'), ['--version'], { cwd: elsewhere })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^\d+\.\d+\.\d+\n$/)
  })

  it('the first-key hint of a server started from another directory names a command that makes a key for it', async (t) => {
    // DATABASE_URL unset: the install's own data/petstore.db, which the CLI finds from anywhere too.
    const server = await startServer(t, {}, [join(install, 'dist/server.js')])
    await waitForOutput(server, /Make more with: /)
    const cli = /Make more with: (.+) keys create --name NAME/.exec(server.stdout())![1]!
    assert.equal(cli, join(install, 'bin/petstore'))
    const made = await run('sh', ['-c', `${cli} keys create --name hinted`], { cwd: tempDir(t) })
    assert.equal(made.code, 0, made.stderr)
    const res = await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${made.stdout.trim()}` } })
    assert.equal(res.status, 200)
  })

  it('without a build it says what to run, exit 1', async (t) => {
    const bare = tempDir(t)
    mkdirSync(join(bare, 'bin'))
    copyFileSync(join(ROOT, 'bin/petstore'), join(bare, 'bin/petstore'))
    const r = await run(join(bare, 'bin/petstore'), ['--help'], { cwd: bare })
    assert.equal(r.code, 1)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /^petstore: .*dist\/cli\/index\.js is missing: run `npm install` \(or `npm run build`\) in .* first\n$/)
  })
})
