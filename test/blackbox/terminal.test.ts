// requires: script
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it, type TestContext } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { childEnv, ROOT, SERVER_PATH } from '../helpers/process.js'
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
    cwd: ROOT, env: childEnv({ TERM: 'xterm', HOST: '127.0.0.1', PORT: '0', EVENT_LOOP_MAX_DELAY_MS: '0', SHUTDOWN_DELAY_MS: '0', ...env }), stdio: ['pipe', 'pipe', 'pipe']
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
