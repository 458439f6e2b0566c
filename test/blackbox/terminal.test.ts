// requires: script
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { stripVTControlCharacters as visible } from 'node:util'
import { describe, it, type TestContext } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { childEnv, ROOT, runCli, runInTerminal, SERVER_PATH, startServer } from '../helpers/process.js'
import { onCleanup } from '../helpers/cleanup.js'

const KEY = /psk_[A-Za-z0-9_-]{43}/
const ESC = '\u001b['
const shellQuote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`

/**
 * Starts the compiled server on a pseudo-terminal (util-linux `script`), as a person at a terminal
 * would; `redirect` is appended to the shell command (e.g. `>file` to pipe stdout away). Resolves
 * once `ready` holds for what the terminal shows; the server is stopped when the test ends.
 */
async function startInTerminal (t: TestContext, env: Record<string, string>, ready: (screen: string) => boolean, redirect = ''): Promise<string> {
  // `timeout` bounds the server's life even if the teardown below were never reached.
  const command = `exec timeout 120 ${shellQuote(process.execPath)} ${shellQuote(SERVER_PATH)} ${redirect}`
  const child = spawn('script', ['--quiet', '--return', '--command', command, '/dev/null'], {
    cwd: ROOT, env: childEnv({ TERM: 'xterm', HOST: '127.0.0.1', PORT: '0', EVENT_LOOP_MAX_DELAY_MS: '0', SHUTDOWN_DRAIN_MS: '0', ...env }), stdio: ['pipe', 'pipe', 'pipe']
  })
  let screen = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => { screen += s })
  const exited = new Promise(resolve => child.once('exit', resolve))
  onCleanup(t, async () => {
    // Closing the terminal hangs up the server (SIGHUP), as closing a terminal window does.
    child.kill('SIGTERM')
    await exited
  })
  for (let i = 0; i < 600 && !ready(screen) && child.exitCode === null; i++) await sleep(100)
  assert.ok(ready(screen), `not ready; the terminal showed:\n${screen}`)
  return screen
}

const listening = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/

describe('logs and the first key on a terminal (black box, pseudo-terminal)', () => {
  it('shows pretty, coloured log lines and the first key on the terminal, writing no key file', async (t) => {
    const dir = tempDir(t)
    const screen = await startInTerminal(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` },
      s => listening.test(s) && KEY.test(s))
    // pino-pretty: "[HH:MM:SS.mmm] INFO: message", the level coloured; no JSON.
    const line = screen.split('\r\n').find(l => l.includes('Server listening at')) ?? ''
    assert.match(line, /^\[\d\d:\d\d:\d\d\.\d{3}\] .*: .*Server listening at http:\/\/127\.0\.0\.1:\d+/)
    assert.ok(line.includes(`${ESC}32mINFO${ESC}39m`), `a green INFO level: ${JSON.stringify(line)}`)
    assert.doesNotMatch(screen, /\{"level"/)
    assert.match(screen, /It is shown only this once:\r\n\r\n {4}psk_/)
    assert.equal(existsSync(join(dir, 'first-api-key.txt')), false)
    // The key shown works.
    const key = KEY.exec(screen)![0]
    const url = listening.exec(screen)![1]!
    assert.equal((await fetch(`${url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status, 200)
  })

  it('honours NO_COLOR: pretty lines without colour', async (t) => {
    const dir = tempDir(t)
    const screen = await startInTerminal(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, NO_COLOR: '1' }, s => listening.test(s))
    assert.match(screen, /\[\d\d:\d\d:\d\d\.\d{3}\] INFO: .*Server listening at/)
    assert.equal(screen.includes(ESC), false, JSON.stringify(screen))
  })

  it('with stdout piped and stderr on the terminal: JSON lines on stdout, the key only on the terminal (stderr)', async (t) => {
    const dir = tempDir(t)
    const out = join(dir, 'stdout.log')
    const screen = await startInTerminal(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` },
      s => KEY.test(s) && readFileSafe(out).includes('Server listening'), `>${shellQuote(out)}`)
    const logged = readFileSafe(out)
    for (const line of logged.trimEnd().split('\n')) assert.equal(typeof JSON.parse(line), 'object', line)
    assert.doesNotMatch(logged, KEY)
    assert.match(screen, /It is shown only this once/)
    assert.doesNotMatch(screen, /Server listening/)
    assert.equal(existsSync(join(dir, 'first-api-key.txt')), false)
  })
})

function readFileSafe (path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return ''
  }
}

describe('the petstore CLI on a terminal (black box, pseudo-terminal)', () => {
  it('keys list fits an 80-column terminal, every column filled and long names cut; --wide shows them whole', async (t) => {
    const dir = tempDir(t)
    const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
    const long = 'deployment-pipeline-of-the-payments-team-in-the-european-region-rotated-quarterly-by-the-sre-on-call'
    assert.equal(long.length, 100)
    const made = await runCli(['keys', 'create', '--name', long, '--create', '--scope', 'pets:read', '--expires', '90d'], env)
    assert.equal(made.code, 0, made.stderr)
    for (const name of ['billing', 'old', 'rotating']) assert.equal((await runCli(['keys', 'create', '--name', name], env)).code, 0)
    assert.equal((await runCli(['keys', 'revoke', '3'], env)).code, 0)
    assert.equal((await runCli(['keys', 'revoke', '4', '--after', '2h'], env)).code, 0)
    // A call with the first key fills its last-used column (written at the latest when the server stops).
    const server = await startServer(t, env)
    assert.equal((await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${made.stdout.trim()}` } })).status, 200)
    server.child.kill('SIGTERM')
    assert.deepEqual(await server.exited, { code: 0, signal: null })

    const cli = join(ROOT, 'dist', 'cli', 'index.js')
    const errFile = join(dir, 'stderr')
    const narrow = await runInTerminal([cli, 'keys', 'list'], env, { columns: 80, stderrFile: errFile })
    assert.equal(narrow.code, 0, narrow.output)
    const lines = visible(narrow.output).split('\r\n').filter(l => l !== '')
    assert.equal(lines.length, 5, narrow.output)
    for (const line of lines) assert.ok([...line].length <= 80, `${[...line].length} columns: ${line}`)
    assert.match(lines[0]!, /^id +name +state +works until +last used +scopes$/)
    const minute = '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\dZ'
    assert.match(lines[1]!, new RegExp(`^1 +deployment-pipel[a-z-]*… +active +${minute} +${minute} +pets:read$`))
    assert.match(lines[2]!, /^2 +billing +active +- +- +all$/)
    assert.match(lines[3]!, new RegExp(`^3 +old +revoked +${minute} +- +all$`))
    assert.match(lines[4]!, new RegExp(`^4 +rotating +active +${minute} +- +all$`))
    assert.equal([...lines[1]!].length, 80, 'the long name takes the room left, no more')
    assert.equal(readFileSync(errFile, 'utf8'), `petstore: store: SQLite ${join(dir, 'petstore.db')}\n`)

    const wide = await runInTerminal([cli, 'keys', 'list', '--wide'], env, { columns: 80, stderrFile: errFile })
    assert.equal(wide.code, 0, wide.output)
    const wideLines = visible(wide.output).split('\r\n').filter(l => l !== '')
    assert.match(wideLines[0]!, /^id +name +created +last used +revoke at +scopes +expires +state$/)
    assert.ok(wideLines[1]!.includes(long), wide.output)

    // --json and the piped lines are not cut: every column, the whole name.
    const json = await runInTerminal([cli, 'keys', 'list', '--json'], env, { columns: 80, stderrFile: errFile })
    assert.equal((JSON.parse(json.output) as Array<{ name: string }>)[0]!.name, long)
    const piped = await runCli(['keys', 'list'], env)
    assert.deepEqual(piped.stdout.split('\n')[0]!.split('\t').slice(0, 2), ['1', long])
  })

  it('backup with stdout to a file names its store on stderr (the terminal)', async (t) => {
    const dir = tempDir(t)
    const db = join(dir, 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${db}` }
    assert.equal((await runCli(['keys', 'create', '--name', 'k', '--create'], env)).code, 0)
    const out = join(dir, 'stdout')
    const r = await runInTerminal([join(ROOT, 'dist', 'cli', 'index.js'), 'backup', join(dir, 'backup.db')], env, { stdoutFile: out })
    assert.equal(r.code, 0, r.output)
    assert.match(r.output, new RegExp(`^petstore: store: SQLite ${db}\\r\\n`))
    assert.match(r.output, /backed up 0 pets and 1 API keys to /)
    assert.equal(readFileSync(out, 'utf8'), '')
  })
})
