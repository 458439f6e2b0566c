import { type ChildProcess, spawn } from 'node:child_process'
import type { TestContext } from 'node:test'
import { onCleanup } from './cleanup.js'
import { killAtExit } from './exit-watch.js'
import { freePort } from './server.js'

/** A real redis-server (Debian's) on a free loopback port, without persistence; stopped when the test ends. */
export async function startRedis (t: TestContext): Promise<string> {
  return (await startRedisServer(t)).url
}

/**
 * startRedis, with a way to stop the server mid-test (an outage) and to start it again on the same
 * port (empty: nothing is persisted).
 */
export async function startRedisServer (t: TestContext): Promise<{ url: string, stop: () => Promise<void>, start: () => Promise<void> }> {
  const port = await freePort()
  let child: ChildProcess | undefined
  let exited: Promise<void> = Promise.resolve()
  onCleanup(t, () => { child?.kill('SIGKILL') })
  const start = async (): Promise<void> => {
    const c = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = c
    killAtExit(c)
    exited = new Promise<void>(resolve => c.once('exit', () => resolve()))
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('redis-server did not start within 10 s')), 10000)
      let out = ''
      c.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('Ready to accept connections')) {
          clearTimeout(timer)
          resolve()
        }
      })
      c.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`redis-server exited with ${code}: ${out}`))
      })
    })
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    },
    start
  }
}
