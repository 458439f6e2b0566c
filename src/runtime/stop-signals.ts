import { readFileSync } from 'node:fs'
import closeWithGrace from 'close-with-grace'

/**
 * What asks the server to stop, handed to start-server.ts's shutdown, which runs once:
 * - SIGTERM or SIGINT. A repeat of the first signal within REPEAT_MS is the same request (Ctrl-C and
 *   systemd's control-group kill reach npm and the server alike, and launchers forward their copy);
 *   another signal while stopping, or the same one later, exits 1 at once.
 * - With `launcher` (started by npm: launcherLinks()), the end of a process of the launch chain, as
 *   if it had sent SIGTERM: npm's `sh -c` dies of a forwarded signal without passing it on, and a
 *   SIGKILL of npm passes nothing on.
 * - Anything else close-with-grace handles (an uncaught error, SIGHUP...), with its own rule.
 * `delayMs` bounds the whole shutdown: past it close-with-grace logs and exits 1.
 */
export interface StopCause {
  signal?: string
  /** The launching process ended (only watched with `launcher`). */
  launcherExited?: true
  err?: Error
}

const SIGNALS = ['SIGTERM', 'SIGINT'] as const
const REPEAT_MS = 1000
const LAUNCHER_CHECK_MS = 200

export function onStopRequest (
  opts: { delayMs: number, launcher?: Link[], logger: { error: (message: unknown) => void } },
  stop: (cause: StopCause) => Promise<void>
): void {
  let stopping: { cause: StopCause, at: number } | undefined
  const grace = closeWithGrace({ delay: opts.delayMs, logger: opts.logger, skip: [...SIGNALS] }, async ({ signal, err, manual }) => {
    const cause: StopCause = manual === true && stopping !== undefined ? stopping.cause : { signal, err }
    stopping ??= { cause, at: performance.now() }
    await stop(cause)
  })
  const request = (cause: StopCause): void => {
    stopping = { cause, at: performance.now() }
    grace.close()
  }

  for (const signal of SIGNALS) {
    process.on(signal, () => {
      if (stopping === undefined) return request({ signal })
      if (stopping.cause.signal === signal && performance.now() - stopping.at < REPEAT_MS) return
      opts.logger.error(`second ${signal}, exiting`)
      process.exit(1)
    })
  }

  const launcher = opts.launcher
  if (launcher !== undefined) {
    const timer = setInterval(() => {
      if (launcher.every(({ pid, ppid }) => parentOf(pid) === ppid)) return
      clearInterval(timer)
      if (stopping === undefined) request({ launcherExited: true })
    }, LAUNCHER_CHECK_MS)
    timer.unref()
  }
}

/** A process and its parent, as they were when the server started. */
export interface Link { pid: number, ppid: number }

/**
 * The chain from this process up to the one that launched it: this process and its parent; and
 * when that parent is a shell running one command line (`sh -c …`: npm's way to run `npx` commands
 * and scripts), also the shell and its own parent. Read from /proc; where there is none, the
 * parent alone.
 */
export function launcherLinks (): Link[] {
  const links = [{ pid: process.pid, ppid: process.ppid }]
  const argv = readProc(process.ppid, 'cmdline')?.split('\0')
  const grandparent = parentOf(process.ppid)
  if (argv?.[1] === '-c' && grandparent !== undefined) links.push({ pid: process.ppid, ppid: grandparent })
  return links
}

/** The parent of `pid` now; undefined once it has ended (or without /proc). */
function parentOf (pid: number): number | undefined {
  if (pid === process.pid) return process.ppid
  const stat = readProc(pid, 'stat')
  // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
  return stat === undefined ? undefined : Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
}

function readProc (pid: number, file: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8')
  } catch {
    return undefined
  }
}
