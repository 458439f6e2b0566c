import type { ChildProcess } from 'node:child_process'
import { appendFileSync } from 'node:fs'
import { after } from 'node:test'

/**
 * Watches a process of ours (the server, the CLI) that a test started. Ending by a signal the test
 * did not send itself is a crash (better-sqlite3 aborting on an unsupported Node, a segfault), even
 * when the test's own assertions happen to pass: it is written to PETSTORE_TEST_SIGNAL_LOG, and
 * scripts/run-tests.mjs fails the run when that file is not empty. A SIGKILL the test sent (crash
 * tests) is expected; SIGTERM/SIGINT must end in a graceful exit 0, never in the signal itself.
 */
export function watchExit (child: ChildProcess, what: string): void {
  killAtExit(child)
  const sent = new Set<string>()
  const kill = child.kill.bind(child)
  child.kill = (signal?: NodeJS.Signals | number) => {
    sent.add(String(signal ?? 'SIGTERM'))
    return kill(signal)
  }
  child.once('exit', (_code, signal) => {
    if (signal !== null && !(signal === 'SIGKILL' && sent.has('SIGKILL'))) recordSignal(what, child.pid, signal)
  })
}

const live = new Set<ChildProcess>()
const killLive = (): void => { for (const child of live) child.kill('SIGKILL') }
// After every test of the file (node:test's root `after`: this module is loaded by the files that
// start processes), and at exit at the latest.
after(killLive)
process.once('exit', killLive)

/**
 * A process a test started that is still running when the test file's tests have all ended (a
 * cleanup that never ran, a test that timed out) is killed then, not left holding a port and a store
 * and keeping the file's process, and the run, from ending.
 */
export function killAtExit (child: ChildProcess): void {
  live.add(child)
  child.once('exit', () => live.delete(child))
}

/** Records a process of ours that ended by an unexpected signal (see watchExit). */
export function recordSignal (what: string, pid: number | undefined, signal: string): void {
  const line = `${what} (pid ${pid ?? '?'}) ended by ${signal}\n`
  const log = process.env.PETSTORE_TEST_SIGNAL_LOG
  if (log !== undefined && log !== '') appendFileSync(log, line)
  else process.stderr.write(`UNEXPECTED SIGNAL: ${line}`)
}
