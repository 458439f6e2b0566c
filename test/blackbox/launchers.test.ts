/*
 * A signal reaches the server however it is started. Each way a user starts it (`npm start`,
 * `npx petstore serve`, `npm run dev`) runs in a process group of its own; the test signals the
 * launcher's pid (npm's), as a supervisor, `docker stop` or `kill PID` does, and checks that the
 * server logged its drain and shut down cleanly, the exit codes, and that no process of the group
 * is left (read from /proc: an orphan keeps its process group when its parent dies).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { before, describe, it, type TestContext } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'
import { childEnv, ROOT } from '../helpers/process.js'

const DRAIN_MS = 1500

interface LogLine { pid: number, msg: string, signal?: string, launcherExited?: boolean }

/** The fields of /proc/PID/stat after `pid (comm)`: state, ppid, pgrp, … (comm may hold spaces and parentheses). */
function statFields (pid: number | string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

/** The pids of the processes in process group `pgid`. */
function processGroup (pgid: number): number[] {
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let fields: string[]
    try {
      fields = statFields(name)
    } catch {
      continue // ended meanwhile
    }
    if (fields[0] !== 'Z' && Number(fields[2]) === pgid) pids.push(Number(name))
  }
  return pids
}

/**
 * Starts `command` in a process group of its own (its pid is the group's id); resolves once the server
 * listens, `depth` processes below it (1: npm's child, no shell or Node shim process in between).
 */
async function launch (t: TestContext, command: string, args: string[], depth: number) {
  const env = childEnv({
    DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`,
    HOST: '127.0.0.1',
    PORT: '0',
    SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
    EVENT_LOOP_MAX_DELAY_MS: '0'
  })
  const child = spawn(command, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  const pgid = child.pid!
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => { out += s })
  child.stderr.setEncoding('utf8').on('data', (s: string) => { out += s })
  // Every writer gone (npm, and a server that outlived it): all the output has been read.
  const drained = Promise.all([child.stdout, child.stderr].map(stream => new Promise(resolve => stream.once('end', resolve))))
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  onCleanup(t, () => {
    // Whatever a failed test left behind.
    for (const pid of processGroup(pgid)) process.kill(pid, 'SIGKILL')
  })
  const lines = (): LogLine[] => out.split('\n').filter(l => l.startsWith('{')).map(l => JSON.parse(l) as LogLine)
  for (let i = 0; i < 600 && !lines().some(l => l.msg.startsWith('Server listening at ')); i++) {
    assert.equal(child.exitCode, null, `${command} ${args.join(' ')} ended before listening:\n${out}`)
    await sleep(100)
  }
  const server = lines().find(l => l.msg.startsWith('Server listening at '))
  assert.ok(server !== undefined, `${command} ${args.join(' ')} did not listen within 60 s:\n${out}`)
  const url = /http:\/\/[\d.:]+/.exec(server.msg)![0]
  assert.equal((await fetch(`${url}/healthz`)).status, 200)
  const group = processGroup(pgid)
  assert.ok(group.includes(server.pid), `the server (pid ${server.pid}) is in the launcher's group ${group.join(' ')}`)
  let ancestor = server.pid
  for (let i = 0; i < depth; i++) ancestor = Number(statFields(ancestor)[1])
  assert.equal(ancestor, pgid, `the server is ${depth} process(es) below ${command}`)
  return {
    pid: pgid,
    exited,
    out: () => out,
    /** The server's own log lines. */
    serverLines: () => lines().filter(l => l.pid === server.pid),
    /** Resolves with how long the group took to empty after `since` (fails after `withinMs`), once its output is all read. */
    async groupGone (since: number, withinMs: number): Promise<number> {
      while (processGroup(pgid).length > 0) {
        if (performance.now() - since > withinMs) {
          assert.fail(`still running ${withinMs} ms after the signal: ${processGroup(pgid).join(' ')}\n${out}`)
        }
        await sleep(50)
      }
      const took = performance.now() - since
      await drained
      return took
    }
  }
}

type Launched = Awaited<ReturnType<typeof launch>>

/** The server drained (SIGTERM, or its launcher ended) and then shut down cleanly. */
function assertDrained (run: Launched, cause: Partial<LogLine>): void {
  const msgs = run.serverLines()
  const drain = msgs.find(l => l.msg.startsWith('shutting down: draining'))
  assert.ok(drain !== undefined, `no drain logged:\n${run.out()}`)
  assert.deepEqual({ signal: drain.signal, launcherExited: drain.launcherExited }, { signal: undefined, launcherExited: undefined, ...cause })
  assert.ok(msgs.some(l => l.msg === 'shut down cleanly'), `no clean shutdown logged:\n${run.out()}`)
  assert.ok(!msgs.some(l => l.msg.startsWith('second ')), `a second signal was taken as insisting:\n${run.out()}`)
}

// Enough for the drain, closing, and a loaded machine; an orphan that never drains fails it.
const GONE_WITHIN_MS = DRAIN_MS + 8000

describe('a signal to the launcher reaches the server (npm start, npx petstore serve, npm run dev)', () => {
  // npm 11's npx installs the project itself into its cache (~/.npm/_npx) on the first run from a
  // folder; a launcher killed during that install leaves an entry every later npx run fails on. The
  // tests time signals to a running server, so the cache is made once before any of them.
  before(() => {
    const r = spawnSync('npx', ['petstore', '--version'], { cwd: ROOT, env: childEnv({}), encoding: 'utf8', timeout: 180_000 })
    assert.equal(r.status, 0, `npx petstore --version: ${r.stdout}${r.stderr}`)
  })

  // npm start: npm → server (the script's shell and the Node shim exec). npm run dev: npm → Node's watch mode → server.
  for (const [name, args, depth] of [['npm start', ['start'], 1], ['npm run dev', ['run', 'dev'], 2]] as const) {
    it(`${name}: SIGTERM to npm drains the server; npm waits for it and exits 0; nothing is left`, async (t) => {
      const run = await launch(t, 'npm', [...args], depth)
      const sent = performance.now()
      process.kill(run.pid, 'SIGTERM')
      assert.deepEqual(await run.exited, { code: 0, signal: null }, run.out())
      // npm waited for the drain: it ended after it.
      assert.ok(performance.now() - sent >= DRAIN_MS, `npm exited ${Math.round(performance.now() - sent)} ms after SIGTERM, before the ${DRAIN_MS} ms drain`)
      await run.groupGone(sent, GONE_WITHIN_MS)
      assertDrained(run, { signal: 'SIGTERM' })
    })

    it(`${name}: Ctrl-C (SIGINT to the whole group, which npm forwards again) stops the server at once, exit 0`, async (t) => {
      const run = await launch(t, 'npm', [...args], depth)
      const sent = performance.now()
      process.kill(-run.pid, 'SIGINT')
      assert.deepEqual(await run.exited, { code: 0, signal: null }, run.out())
      await run.groupGone(sent, GONE_WITHIN_MS)
      const msgs = run.serverLines()
      assert.ok(!msgs.some(l => l.msg.startsWith('shutting down: draining')), `SIGINT drained:\n${run.out()}`)
      assert.ok(msgs.some(l => l.msg === 'shut down cleanly'), `no clean shutdown logged:\n${run.out()}`)
      assert.ok(!msgs.some(l => l.msg.startsWith('second ')), `the forwarded copy was taken as a second Ctrl-C:\n${run.out()}`)
    })
  }

  it('npx petstore serve: SIGTERM to npm ends npm and its shell (143); the server drains on its own and exits', async (t) => {
    // npm runs the bin through `sh -c`, which dies of the forwarded signal without passing it on;
    // npm then exits by the same signal. The server sees its parent gone and stops as on SIGTERM.
    const run = await launch(t, 'npx', ['petstore', 'serve'], 2)
    const sent = performance.now()
    process.kill(run.pid, 'SIGTERM')
    assert.deepEqual(await run.exited, { code: null, signal: 'SIGTERM' }, run.out())
    await run.groupGone(sent, GONE_WITHIN_MS)
    assertDrained(run, { launcherExited: true })
  })

  for (const [name, command, args, depth] of [['npm start', 'npm', ['start'], 1], ['npx petstore serve', 'npx', ['petstore', 'serve'], 2]] as const) {
    it(`${name}: a SIGKILL of npm leaves the server draining, then gone within the drain time`, async (t) => {
      const run = await launch(t, command, [...args], depth)
      const sent = performance.now()
      process.kill(run.pid, 'SIGKILL')
      assert.deepEqual(await run.exited, { code: null, signal: 'SIGKILL' })
      const took = await run.groupGone(sent, GONE_WITHIN_MS)
      assert.ok(took >= DRAIN_MS, `gone ${Math.round(took)} ms after npm, before its ${DRAIN_MS} ms drain`)
      assertDrained(run, { launcherExited: true })
    })
  }
})
