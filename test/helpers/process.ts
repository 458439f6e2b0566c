import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestContext } from 'node:test'
import { recordSignal, watchExit } from './exit-watch.js'
import { onCleanup } from './cleanup.js'

/** The repository root: the compiled entry points run from here, as `npm start` and `npx petstore` do. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SERVER = fileURLToPath(new URL('../../dist/server.js', import.meta.url))
const CLI = fileURLToPath(new URL('../../dist/cli/index.js', import.meta.url))

function assertBuilt (): void {
  if (!existsSync(SERVER) || !existsSync(CLI)) throw new Error('dist/ is missing: run `npm run build` (npm test builds when a chosen file needs dist/)')
}

/** A clean environment for a child: nothing of ours leaks in from the shell running the tests. */
export function childEnv (env: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, ...env }
}

export interface CliResult { code: number | null, stdout: string, stderr: string }

/**
 * Runs `node dist/cli/index.js ...args` (the `petstore` bin) and collects its output; `input`, when
 * given, is its stdin. From the repository root unless `opts.cwd` says otherwise; `opts.cli` runs
 * another copy of the entry.
 */
export function runCli (args: string[], env: Record<string, string>, input?: string | Buffer, opts: { cwd?: string, cli?: string } = {}): Promise<CliResult> {
  assertBuilt()
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [opts.cli ?? CLI, ...args], { cwd: opts.cwd ?? ROOT, env: childEnv(env), timeout: 30_000, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null
      resolve({ code, stdout, stderr })
    })
    // execFile's own timeout sends SIGTERM: a CLI run still going after 30 s counts as a crash too.
    child.once('exit', (_code, signal) => { if (signal !== null) recordSignal(`petstore ${args.join(' ')}`, child.pid, signal) })
    if (input !== undefined) child.stdin!.end(input)
  })
}

export interface RunningServer {
  child: ChildProcess
  /** e.g. http://127.0.0.1:41234 */
  url: string
  stdout: () => string
  stderr: () => string
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/**
 * Waits until the server's stdout matches `re` (30 s at most, then fails showing what it said). Log
 * lines are written asynchronously, gathered for a few milliseconds (src/logging/log-destination.ts): a line
 * logged while a request was answered can reach stdout after the client has the answer.
 */
export async function waitForOutput (server: Pick<RunningServer, 'child' | 'stdout'>, re: RegExp): Promise<void> {
  if (re.test(server.stdout())) return
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (!re.test(server.stdout())) return
      done()
      resolve()
    }
    const timer = setTimeout(() => { done(); reject(new Error(`no ${re} on stdout within 30 s:\n${server.stdout()}`)) }, 30_000)
    const done = () => { clearTimeout(timer); server.child.stdout!.off('data', check) }
    // After the helper's own listener (registered first), so stdout() already holds the new chunk.
    server.child.stdout!.on('data', check)
  })
}

/** The URL of a started server's /metrics listener (METRICS_PORT=0), once the server has logged it. */
export async function metricsUrlOf (server: RunningServer): Promise<string> {
  await waitForOutput(server, /"msg":"metrics listening"/)
  return /"url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)","msg":"metrics listening"/.exec(server.stdout())![1]!
}

function spawnWithOutput (args: string[], env: Record<string, string>) {
  assertBuilt()
  const child = spawn(process.execPath, args, { cwd: ROOT, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  watchExit(child, args.join(' '))
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => { out += s })
  child.stderr.setEncoding('utf8').on('data', (s: string) => { err += s })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>(resolve =>
    child.once('exit', (code, signal) => resolve({ code, signal })))
  return { child, stdout: () => out, stderr: () => err, exited }
}

/** The line a start logs once its store is open and /v1 is served (src/start-server.ts SERVING_LINE), JSON or pretty. */
export const SERVING = /(?:"msg":"|INFO: )serving \/v1: the store is open/

/**
 * Starts the compiled server (`node dist/server.js`, what `npm start` runs) on an ephemeral loopback
 * port and resolves once it listens and serves /v1 (a SQLite store is checked while the server
 * already listens: `untilServing: false` resolves at the listening line). The test owns it: it is
 * killed when the test ends.
 */
export async function startServer (t: TestContext, env: Record<string, string>, entry: string[] = [SERVER], opts: { untilServing?: boolean } = {}): Promise<RunningServer> {
  // Overload shedding is off unless a test asks for it, as in buildTestApp: a loaded test machine must
  // not turn the requests of tests about something else into 503s. No drain on SIGTERM either
  // (SHUTDOWN_DRAIN_MS=0; the rolling-restart test asks for one): tests stop their servers often.
  // Without a terminal the first key goes to a file: for PostgreSQL its default is in the project
  // directory, so a test's server writes it to a directory of the test's own instead.
  const keyFile: Record<string, string> = {}
  if (env.DATABASE_URL?.startsWith('postgres') === true) {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-key-'))
    onCleanup(t, () => rmSync(dir, { recursive: true, force: true }))
    keyFile.FIRST_KEY_FILE = join(dir, 'first-api-key.txt')
  }
  const p = spawnWithOutput(entry, { HOST: '127.0.0.1', PORT: '0', EVENT_LOOP_MAX_DELAY_MS: '0', SHUTDOWN_DRAIN_MS: '0', ...keyFile, ...env })
  onCleanup(t, async () => {
    if (p.child.exitCode === null && p.child.signalCode === null) {
      p.child.kill('SIGKILL')
      await p.exited
    }
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not listen and serve within 30 s\nstdout: ${p.stdout()}\nstderr: ${p.stderr()}`)), 30_000)
    const check = () => {
      // JSON lines, or pretty ones (LOG_FORMAT=pretty).
      const m = /(?:"msg":"|INFO: )Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(p.stdout())
      if (m !== null && (opts.untilServing === false || SERVING.test(p.stdout()))) {
        clearTimeout(timer)
        p.child.stdout!.off('data', check)
        resolve(m[1]!)
      }
    }
    p.child.stdout!.on('data', check)
    void p.exited.then(({ code, signal }) => {
      clearTimeout(timer)
      reject(new Error(`server exited (${code ?? signal}) before listening and serving\nstdout: ${p.stdout()}\nstderr: ${p.stderr()}`))
    })
  })
  return { ...p, url }
}

/** Runs the server entry until it exits by itself (e.g. on a bad configuration); killed after 30 s. */
export async function runServerToExit (env: Record<string, string>): Promise<CliResult> {
  const p = spawnWithOutput([SERVER], env)
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 30_000)
  const { code } = await p.exited
  clearTimeout(timer)
  return { code, stdout: p.stdout(), stderr: p.stderr() }
}

export const CLI_PATH = CLI
export const SERVER_PATH = SERVER

const shellQuote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`

/**
 * Runs `node ...args` on a pseudo-terminal (util-linux `script`), as a person at a terminal would:
 * stdin, stdout and stderr are the terminal, unless `stderrFile` sends stderr (`stdoutFile` stdout)
 * to a file. `columns` sets the terminal's width (stty; otherwise it reports none). `output` is what
 * the terminal showed (stdout and stderr merged, \r\n line ends); `code` the child's exit code.
 */
export function runInTerminal (args: string[], env: Record<string, string>, opts: { cwd?: string, stderrFile?: string, stdoutFile?: string, columns?: number, timeoutMs?: number } = {}): Promise<{ code: number | null, output: string }> {
  assertBuilt()
  const command = (opts.columns === undefined ? '' : `stty cols ${opts.columns} rows 24 && exec `) +
    [process.execPath, ...args].map(shellQuote).join(' ') +
    (opts.stdoutFile === undefined ? '' : ` >${shellQuote(opts.stdoutFile)}`) +
    (opts.stderrFile === undefined ? '' : ` 2>${shellQuote(opts.stderrFile)}`)
  return new Promise((resolve) => {
    execFile('script', ['--quiet', '--return', '--command', command, '/dev/null'],
      { cwd: opts.cwd ?? ROOT, env: childEnv({ TERM: 'xterm', ...env }), timeout: opts.timeoutMs ?? 30_000 }, (err, stdout) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null
        resolve({ code, output: stdout })
      })
  })
}
