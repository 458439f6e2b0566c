/*
 * Imported first by every entry point, before anything loads better-sqlite3, which needs Node >= 22.14
 * and crashes older ones. On an older Node the same entry is run again on the runtime `npm install`
 * put next to the package (scripts/runtime.mjs), with the same arguments, environment and streams;
 * this process stays as its launcher, forwards signals and ends as the child ends (if it is killed
 * outright, the child sees fd 3 close and stops as on SIGTERM). docs/reference/node-runtime.md.
 */
import module from 'node:module'

const require = module.createRequire(import.meta.url)

/** Set in the re-run child's environment: the Node version of the launcher. */
const RELAUNCHED = 'PETSTORE_RELAUNCHED_FROM'
const FORWARDED = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'] as const

function supported (version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  return major > 22 || (major === 22 && minor >= 14)
}

/** The runtimes an install puts next to the package (this file is in dist/ or src/, one below it). */
function pinnedRuntimes (): string[] {
  const { fileURLToPath } = require('node:url') as typeof import('node:url')
  const modules = fileURLToPath(new URL('../../node_modules/', import.meta.url))
  return [`${modules}.petstore-node/node_modules/node/bin/node`, `${modules}node/bin/node`]
}

function refuse (): never {
  process.stderr.write(
    `petstore: Node ${process.versions.node} is not supported and no newer Node was installed next to it; ` +
    'use Node 22 (>= 22.14) or 24. `npm install` (or `npm ci`) run with this Node installs Node 24 into ' +
    'node_modules/.petstore-node, which `node dist/server.js` and the `petstore` command then run on.\n')
  process.exit(1)
}

/** Runs this entry again on `runtime`; ends this process as the child ends. */
function relaunch (runtime: string): void {
  const { spawn } = require('node:child_process') as typeof import('node:child_process')
  const { constants } = require('node:os') as typeof import('node:os')
  const child = spawn(runtime, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    env: { ...process.env, [RELAUNCHED]: process.versions.node }
  })
  const forward = (signal: NodeJS.Signals): void => { child.kill(signal) }
  for (const signal of FORWARDED) process.on(signal, forward)
  child.once('error', (err) => {
    process.stderr.write(`petstore: could not start ${runtime}: ${err.message}\n`)
    process.exit(1)
  })
  child.once('exit', (code, signal) => {
    if (signal !== null) {
      for (const s of FORWARDED) process.removeListener(s, forward)
      process.kill(process.pid, signal)
      process.exit(128 + (constants.signals[signal] ?? 0))
    }
    process.exit(code ?? 1)
  })
}

if (!supported(process.versions.node)) {
  const { existsSync } = require('node:fs') as typeof import('node:fs')
  const runtime = process.env[RELAUNCHED] === undefined ? pinnedRuntimes().find(p => existsSync(p)) : undefined
  if (runtime === undefined) refuse()
  relaunch(runtime)
  // Nothing else of this process's modules may be evaluated (they would load better-sqlite3 on this
  // Node): a top-level await that never settles holds the evaluation of every module that imports
  // this one, and this process lives on as the launcher only, until the child's exit ends it.
  await new Promise<never>(() => {})
} else if (process.env[RELAUNCHED] !== undefined) {
  delete process.env[RELAUNCHED]
  // fd 3 is the launcher's pipe: it closes when the launcher ends. Then stop as a supervisor's SIGTERM
  // would have it. Unreferenced, so it never keeps this process alive.
  try {
    const { Socket } = require('node:net') as typeof import('node:net')
    const launcher = new Socket({ fd: 3, readable: true, writable: false })
    launcher.on('error', () => {}).once('close', () => process.kill(process.pid, 'SIGTERM')).resume().unref()
  } catch {}
}
