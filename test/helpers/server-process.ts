import { spawn, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { fileURLToPath } from 'node:url'
import { loadConfig } from '../../src/config/index.js'
import { createApiKey } from '../../src/services/api-keys.js'
import { openStore, type StoreOptions } from '../../src/store/index.js'
import { watchExit } from './exit-watch.js'
import { SERVING } from './process.js'

/** The compiled entry (`npm test` builds it first). */
export const SERVER_JS = fileURLToPath(new URL('../../dist/server.js', import.meta.url))

export interface ServerProcess {
  proc: ChildProcess
  port: number
  /** Everything the process wrote to stdout and stderr so far. */
  output: () => string
  /** Resolves with the exit code/signal once the process has exited. */
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/** Creates an API key in the SQLite file (migrating it first) without starting a server. */
export async function makeKey (dbPath: string): Promise<string> {
  const store = await openStore(loadConfig({ DATABASE_URL: `sqlite:${dbPath}` }))
  try {
    return (await createApiKey(store, 'harness')).key
  } finally {
    await store.close()
  }
}

/**
 * Starts `node dist/server.js` on an ephemeral loopback port over the given SQLite file and waits
 * until it listens and serves /v1. `wrap` prefixes the command (e.g. strace). The caller kills it. Overload shedding
 * is off unless `env` turns it on (a loaded test machine must not shed the requests under test), and
 * so is the drain on SIGTERM (SHUTDOWN_DRAIN_MS=0). `storeOptions` (what users cannot change) start
 * the same entry through scripts/serve-with-store-options.mjs.
 */
export async function startServerProcess (dbPath: string, opts: { env?: Record<string, string>, wrap?: string[], timeoutMs?: number, storeOptions?: StoreOptions } = {}): Promise<ServerProcess> {
  const entry = opts.storeOptions === undefined
    ? [SERVER_JS]
    : [fileURLToPath(new URL('../../scripts/serve-with-store-options.mjs', import.meta.url)), JSON.stringify(opts.storeOptions)]
  const argv = [...(opts.wrap ?? []), process.execPath, ...entry]
  const proc = spawn(argv[0]!, argv.slice(1), {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: `sqlite:${dbPath}`, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', EVENT_LOOP_MAX_DELAY_MS: '0', SHUTDOWN_DRAIN_MS: '0', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  // Wrapped (strace), the signal seen is the wrapper's: it reports the server's own ending.
  watchExit(proc, argv.join(' '))
  let out = ''
  // Keep the tail only: a long run logs a line per request.
  const keep = (d: string) => { out = (out + d).slice(-200_000) }
  proc.stdout!.setEncoding('utf8').on('data', keep)
  proc.stderr!.setEncoding('utf8').on('data', keep)
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>(resolve => proc.once('exit', (code, signal) => resolve({ code, signal })))
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`server did not listen in time:\n${out}`)) }, opts.timeoutMs ?? 20000)
    const look = () => {
      const m = /listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(out)
      // And serving /v1: a SQLite store is checked while the server already listens.
      if (m !== null && SERVING.test(out)) { clearTimeout(timer); resolve(Number(m[1])) }
    }
    proc.stdout!.on('data', look)
    void exited.then(() => { clearTimeout(timer); reject(new Error(`server exited before listening:\n${out}`)) })
  })
  return { proc, port, output: () => out, exited }
}

/**
 * Waits until /readyz answers 200: the store answers and takes writes (on SQLite its writer thread,
 * started once the server listens, is up). A minute is a bound for a hung test, not an expectation.
 */
export async function waitReady (port: number): Promise<void> {
  for (const deadline = Date.now() + 60_000; ;) {
    const res = await httpRequest(port, 'GET', '/readyz', {}).catch(() => undefined)
    if (res?.status === 200) return
    if (Date.now() > deadline) throw new Error(`/readyz did not answer 200 within a minute (last: ${res?.status ?? 'no answer'})`)
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

export interface HttpResult { status: number, body: string, headers: Record<string, string | string[] | undefined> }

/** One HTTP request on a fresh connection (so a kill is seen per request, not per pooled socket). */
export function httpRequest (port: number, method: string, path: string, headers: Record<string, string>, body?: string, timeoutMs = 15000): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { connection: 'close', ...headers }, agent: false }, (res) => {
      let data = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => { data += d })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data, headers: res.headers }))
      res.on('error', reject)
    })
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(body)
  })
}
