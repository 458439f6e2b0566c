/*
 * What stops the compiled server (src/runtime/stop-signals.ts): copies of one signal count once, a later or
 * different signal exits 1 at once, and an orphaned server stops by itself only when npm started it.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it, type TestContext } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'
import { childEnv, ROOT, SERVER_PATH, startServer } from '../helpers/process.js'

const DRAIN_MS = 3000

async function drainingServer (t: TestContext) {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, SHUTDOWN_DRAIN_MS: String(DRAIN_MS) })
  await fetch(`${server.url}/healthz`)
  return server
}

describe('stop requests', () => {
  it('the same signal again within a second (a forwarded copy) is the same request: the drain goes on, exit 0', async (t) => {
    const server = await drainingServer(t)
    server.child.kill('SIGTERM')
    await sleep(100)
    server.child.kill('SIGTERM')
    assert.deepEqual(await server.exited, { code: 0, signal: null })
    assert.match(server.stdout(), /"msg":"shut down cleanly"/)
    assert.doesNotMatch(server.stdout(), /second SIGTERM/)
  })

  for (const [what, second, after] of [['the same signal later', 'SIGTERM', 1500], ['another signal', 'SIGINT', 100]] as const) {
    it(`${what} during the drain exits 1 at once`, async (t) => {
      const server = await drainingServer(t)
      server.child.kill('SIGTERM')
      await sleep(after)
      const sent = performance.now()
      server.child.kill(second)
      assert.deepEqual(await server.exited, { code: 1, signal: null })
      assert.ok(performance.now() - sent < DRAIN_MS - after, 'it did not wait for the drain')
      assert.match(server.stdout(), new RegExp(`"msg":"second ${second}, exiting"`))
    })
  }

  // A shell that starts the server and waits for it, killed once the server listens: the server is left to init.
  for (const [who, npmEnv, stops] of [['started by npm', { npm_lifecycle_event: 'start' }, true], ['started otherwise (nohup, a daemonizer)', {}, false]] as const) {
    it(`an orphaned server ${stops ? 'drains and exits' : 'serves on'} when ${who}`, async (t) => {
      const dir = tempDir(t)
      const env = childEnv({ ...npmEnv, DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, HOST: '127.0.0.1', PORT: '0', SHUTDOWN_DRAIN_MS: '500', EVENT_LOOP_MAX_DELAY_MS: '0' })
      const log = join(dir, 'server.log')
      const sh = spawn('sh', ['-c', '"$0" "$1" >"$2" 2>&1 & echo $!; wait', process.execPath, SERVER_PATH, log], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] })
      onCleanup(t, () => { sh.kill('SIGKILL') })
      const pid = Number(await new Promise<string>(resolve => sh.stdout.setEncoding('utf8').once('data', resolve)))
      // Running, not a zombie left to a parent that does not reap (a test runner as a container's PID 1).
      const alive = () => { try { return !/^\d+ \(.*\) Z /s.test(readFileSync(`/proc/${pid}/stat`, 'utf8')) } catch { return false } }
      onCleanup(t, () => { if (alive()) process.kill(pid, 'SIGKILL') })
      const logged = () => { try { return readFileSync(log, 'utf8') } catch { return '' } }
      for (let i = 0; i < 300 && !logged().includes('Server listening at'); i++) await sleep(100)
      assert.match(logged(), /Server listening at/)
      sh.kill('SIGKILL')
      if (stops) {
        for (let i = 0; i < 100 && alive(); i++) await sleep(100)
        assert.ok(!alive(), `still running 10 s after its parent ended:\n${logged()}`)
        assert.match(logged(), /"launcherExited":true,"delayMs":500,"msg":"shutting down: draining/)
        assert.match(logged(), /"msg":"shut down cleanly"/)
      } else {
        // Twice the drain and the parent check: long enough to have stopped, had it watched.
        await sleep(1500)
        assert.ok(alive(), `it stopped:\n${logged()}`)
        const url = /Server listening at (http:\/\/[\d.:]+)/.exec(logged())![1]!
        assert.equal((await fetch(`${url}/healthz`)).status, 200)
        process.kill(pid, 'SIGTERM')
        for (let i = 0; i < 100 && alive(); i++) await sleep(100)
        assert.match(logged(), /"msg":"shut down cleanly"/)
      }
    })
  }
})
