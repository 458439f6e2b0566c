import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import type { TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface ServerProcess {
  child: ChildProcess
  /** http://127.0.0.1:PORT */
  base: string
  /** Lines the process wrote to stdout so far. */
  stdout: string[]
  stop: () => Promise<void>
}

/**
 * Starts the built service (`node dist/server.js`, as `npm start` does) on an ephemeral port and
 * resolves once it listens. Stopped (SIGTERM, then SIGKILL) when the test ends.
 */
export async function startServerProcess (t: TestContext, env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const stdout: string[] = []
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000) })
  const exited = once(child, 'exit')
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 10000)
    await exited
    clearTimeout(timer)
  }
  t.after(stop)
  const base = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      stdout.push(line)
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line)
      if (m !== null) resolve(m[1]!)
    })
    void exited.then(([code]) => reject(new Error(`server exited with ${String(code)} before listening: ${stderr}`)))
  })
  return { child, base, stdout, stop }
}

/** Runs the built CLI (`petstore …`); resolves with its exit code and output. */
export async function runCli (args: string[], env: Record<string, string>): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const child = spawn(process.execPath, ['dist/cli/index.js', ...args], {
    cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const [code] = await once(child, 'exit') as [number | null]
  return { code, stdout, stderr }
}
