// requires: old-node
/*
 * A host whose system Node is too old for the project (Node 20: better-sqlite3 13 needs >= 22.14),
 * after the documented install (which put Node 24 in node_modules/.petstore-node): the commands the
 * docs give, run with that old Node, work through the installed runtime. `node dist/server.js`
 * serves and stops cleanly on SIGTERM (the launcher passes it on and exits with the server's code),
 * the CLI answers with its own exit codes, `bin/petstore` and the systemd unit's ExecStart run, and a
 * SIGKILL of the launcher leaves no server behind. Without an installed runtime it refuses in one
 * line. The old Node: PETSTORE_TEST_OLD_NODE, else /usr/bin/node (scripts/run-tests.mjs checks it
 * is older than 22.14).
 */
import assert from 'node:assert/strict'
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { readFileSync, readlinkSync, realpathSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it, type TestContext } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'
import { watchExit } from '../helpers/exit-watch.js'
import { childEnv, ROOT } from '../helpers/process.js'

const OLD_NODE = process.env.PETSTORE_TEST_OLD_NODE ?? '/usr/bin/node'
const PINNED = realpathSync(join(ROOT, 'node_modules/.petstore-node/node_modules/node/bin/node'))
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
/** PATH as a host without a current Node has it: the old Node's directory first, none of the project's. */
const HOST_PATH = [dirname(OLD_NODE), ...(process.env.PATH ?? '').split(':').filter(d => !d.includes('node_modules'))].join(':')

interface Run { code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }

function run (command: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise(resolve => {
    execFile(command, args, { cwd: ROOT, env: childEnv({ ...env, PATH: HOST_PATH }), timeout: 120_000 }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: unknown, signal?: NodeJS.Signals | null }) | null
      resolve({ code: e === null ? 0 : typeof e.code === 'number' ? e.code : null, signal: e?.signal ?? null, stdout, stderr })
    })
  })
}

/** The processes whose parent is `pid` (from /proc). */
function childrenOf (pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

function alive (pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/** Starts `command args` as a server on a free port with a SQLite store in a temporary folder; resolves once it listens. */
async function serve (t: TestContext, command: string, args: string[], env: Record<string, string> = {}) {
  const dir = tempDir(t)
  const child: ChildProcess = spawn(command, args, {
    cwd: ROOT,
    env: childEnv({ PATH: HOST_PATH, DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, FIRST_KEY_FILE: join(dir, 'first-api-key.txt'), HOST: '127.0.0.1', PORT: '0', SHUTDOWN_DRAIN_MS: '300', EVENT_LOOP_MAX_DELAY_MS: '0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe']
  })
  watchExit(child, `${command} ${args.join(' ')}`)
  onCleanup(t, () => {
    for (const pid of childrenOf(child.pid!)) { try { process.kill(pid, 'SIGKILL') } catch {} }
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (s: string) => { out += s })
  child.stderr!.setEncoding('utf8').on('data', (s: string) => { out += s })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  let url: string | undefined
  for (let i = 0; i < 600 && url === undefined; i++) {
    assert.equal(child.exitCode, null, `${command} ${args.join(' ')} ended before listening:\n${out}`)
    // Listening, and serving /v1 (a SQLite file is checked while the server already listens).
    url = /"msg":"serving \/v1: the store is open"/.test(out) ? /Server listening at (http:\/\/[\d.:]+)/.exec(out)?.[1] : undefined
    if (url === undefined) await sleep(100)
  }
  assert.ok(url !== undefined, `${command} ${args.join(' ')} did not listen within 60 s:\n${out}`)
  return { child, url, exited, out: () => out }
}

describe('a host whose system Node is older than 22.14 runs the documented commands on the installed runtime', () => {
  it('the old Node is old, and the installed runtime is newer', async () => {
    const old = await run(OLD_NODE, ['-p', 'process.versions.node'])
    const [major, minor] = old.stdout.trim().split('.').map(Number) as [number, number]
    assert.ok(major < 22 || (major === 22 && minor < 14), `${OLD_NODE} is Node ${old.stdout.trim()}`)
    const pinned = await run(PINNED, ['-p', 'process.versions.node'])
    assert.notEqual(pinned.stdout.trim(), old.stdout.trim())
  })

  it('node dist/cli/index.js: --help, --version, keys create exit 0; a usage error keeps its exit code 2', async (t) => {
    const help = await run(OLD_NODE, ['dist/cli/index.js', '--help'])
    assert.deepEqual([help.code, help.signal], [0, null], help.stderr)
    assert.match(help.stdout, /^Usage: petstore /)
    const version = await run(OLD_NODE, ['dist/cli/index.js', '--version'])
    assert.deepEqual([version.code, version.stdout], [0, `${pkg.version}\n`], version.stderr)
    const dir = tempDir(t)
    const key = await run(OLD_NODE, ['dist/cli/index.js', 'keys', 'create', '--name', 'old-host', '--create'], { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` })
    assert.deepEqual([key.code, key.signal], [0, null], key.stderr)
    assert.match(key.stdout, /^psk_\S+\n$/)
    const list = await run(OLD_NODE, ['dist/cli/index.js', 'keys', 'list', '--json'], { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` })
    assert.equal(list.code, 0, list.stderr)
    assert.match(list.stdout, /old-host/)
    const usage = await run(OLD_NODE, ['dist/cli/index.js', 'no-such-command'])
    assert.deepEqual([usage.code, usage.signal], [2, null])
    assert.match(usage.stderr, /unknown command 'no-such-command'/)
  })

  it('bin/petstore --help and the bin through /usr/bin/env node run', async () => {
    const launcher = await run(join(ROOT, 'bin/petstore'), ['--help'])
    assert.equal(launcher.code, 0, launcher.stderr)
    assert.match(launcher.stdout, /^Usage: petstore /)
    // The bin's `#!/usr/bin/env node` finds the old Node first on this PATH.
    const bin = await run(join(ROOT, 'dist/cli/index.js'), ['--version'])
    assert.deepEqual([bin.code, bin.stdout], [0, `${pkg.version}\n`], bin.stderr)
  })

  it('node dist/server.js serves on the installed runtime; SIGTERM drains it and exit 0 comes back through the launcher', async (t) => {
    const server = await serve(t, OLD_NODE, ['dist/server.js'])
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200)
    const [inner] = childrenOf(server.child.pid!)
    assert.ok(inner !== undefined, 'the launcher runs the server as its child')
    assert.equal(readlinkSync(`/proc/${inner}/exe`), PINNED)
    assert.equal(readlinkSync(`/proc/${server.child.pid!}/exe`), realpathSync(OLD_NODE))
    server.child.kill('SIGTERM')
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.out())
    assert.match(server.out(), /"signal":"SIGTERM".*"msg":"shutting down: draining/)
    assert.match(server.out(), /"msg":"shut down cleanly"/)
    assert.equal(alive(inner), false)
  })

  it('SIGINT reaches the server through the launcher: it stops at once, exit 0', async (t) => {
    const server = await serve(t, OLD_NODE, ['dist/server.js'])
    server.child.kill('SIGINT')
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.out())
    assert.match(server.out(), /"msg":"shut down cleanly"/)
    assert.doesNotMatch(server.out(), /draining/)
  })

  it('a SIGKILL of the launcher: the server notices, drains and exits', async (t) => {
    const server = await serve(t, OLD_NODE, ['dist/server.js'])
    const [inner] = childrenOf(server.child.pid!) as [number]
    server.child.kill('SIGKILL')
    await server.exited
    for (let i = 0; i < 200 && alive(inner); i++) await sleep(50)
    assert.equal(alive(inner), false, `the server (pid ${inner}) outlived its launcher`)
    assert.match(server.out(), /"msg":"shut down cleanly"/)
  })

  it('the systemd unit\'s ExecStart, in the checkout\'s place, serves and stops with exit 0 on SIGTERM', async (t) => {
    const unit = readFileSync(join(ROOT, 'deploy/systemd/petstore.service'), 'utf8')
    const workdir = /^WorkingDirectory=(.+)$/m.exec(unit)![1]!
    const [exec, ...args] = /^ExecStart=(.+)$/m.exec(unit)![1]!.replaceAll(workdir, ROOT.replace(/\/$/, '')).split(' ') as [string, ...string[]]
    assert.equal(exec, join(ROOT, 'node_modules/.bin/node'), 'the unit runs the Node the install put in place')
    // systemd's own PATH, the old Node on it.
    const server = await serve(t, exec, args, { PATH: `${dirname(OLD_NODE)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin` })
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200)
    // The shim execs the installed runtime: the unit's main process is the server itself.
    assert.equal(readlinkSync(`/proc/${server.child.pid!}/exe`), PINNED)
    server.child.kill('SIGTERM')
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.out())
    assert.match(server.out(), /"msg":"shut down cleanly"/)
  })

  it('with no runtime to run on, the entries refuse in one line (exit 1, no crash)', async () => {
    // The variable marks a run that is already the relaunched one: it is not relaunched again.
    for (const entry of ['dist/cli/index.js', 'dist/server.js']) {
      const r = await run(OLD_NODE, [entry, '--help'], { PETSTORE_RELAUNCHED_FROM: 'test' })
      assert.deepEqual([r.code, r.signal, r.stdout], [1, null, ''])
      assert.match(r.stderr, /^petstore: Node \d+\.\d+\.\d+ is not supported and no newer Node was installed next to it; use Node 22 \(>= 22\.14\) or 24\..*\n$/)
    }
  })
})
