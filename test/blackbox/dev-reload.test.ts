import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { appendFileSync, cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import { childEnv, ROOT } from '../helpers/process.js'
import { onCleanup } from '../helpers/cleanup.js'

interface LogLine { pid: number, msg: string }

/** The JSON log lines in what `npm run dev` printed (npm's and Node's watch mode's own lines are not JSON). */
function logLines (out: string): LogLine[] {
  return out.split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as LogLine)
}

describe('npm run dev (black box)', () => {
  it('restarts the server when a source file changes', async (t) => {
    // A copy of the sources, so the edit below touches no file of the repository.
    const root = mkdtempSync(join(tmpdir(), 'petstore-dev-'))
    for (const f of ['src', 'package.json', 'tsconfig.json']) cpSync(join(ROOT, f), join(root, f), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir')

    // Its own process group, so the teardown stops npm, tsx and the server it runs together.
    const child = spawn('npm', ['run', 'dev', '--silent'], {
      cwd: root,
      detached: true,
      env: childEnv({ DATABASE_URL: `sqlite:${join(root, 'petstore.db')}`, HOST: '127.0.0.1', PORT: '0', EVENT_LOOP_MAX_DELAY_MS: '0', SHUTDOWN_DRAIN_MS: '0' }),
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (s: string) => { out += s })
    child.stderr.setEncoding('utf8').on('data', (s: string) => { out += s })
    const exited = new Promise(resolve => child.once('exit', resolve))
    onCleanup(t, async () => {
      // One teardown, in order: stop the processes, then remove their files.
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM')
      await exited
      rmSync(root, { recursive: true, force: true })
    })

    const listening = () => logLines(out).filter(l => l.msg.startsWith('Server listening at '))
    const waitFor = async (cond: () => boolean) => {
      for (let i = 0; i < 900 && !cond() && child.exitCode === null; i++) await sleep(100)
      assert.ok(cond(), `npm run dev printed:\n${out}`)
    }

    await waitFor(() => listening().length === 1)
    const first = listening()[0]!
    const url = /http:\/\/[\d.:]+/.exec(first.msg)![0]
    assert.equal((await fetch(`${url}/healthz`)).status, 200)

    // A change to a source file: the old server shuts down cleanly and a new process serves.
    appendFileSync(join(root, 'src', 'server.ts'), '// edited\n')
    await waitFor(() => listening().length === 2)
    const second = listening()[1]!
    assert.notEqual(second.pid, first.pid)
    assert.ok(logLines(out).some(l => l.pid === first.pid && l.msg === 'shut down cleanly'), out)
    const newUrl = /http:\/\/[\d.:]+/.exec(second.msg)![0]
    assert.equal((await fetch(`${newUrl}/healthz`)).status, 200)
  })
})
