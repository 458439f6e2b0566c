// A throwaway PgBouncer (Debian's, 1.18 on Debian 12) in front of a PostgreSQL server, for the tests
// and the bench: the pooler almost every multi-instance deployment has between its instances and
// PostgreSQL. Transaction pooling and the stock startup-parameter policy
// (`ignore_startup_parameters = extra_float_digits`), as a new user would run it. Every database
// of the server is reachable through it under the same name (the `*` fallback entry).
// PgBouncer refuses to run as root, so as root it runs as the `postgres` OS user (runuser), like
// the test PostgreSQL cluster.
import { spawn, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { asPostgresUser, freePort, postgresOwner } from './lib/local.mjs'

/** The pgbouncer binary: PGBOUNCER_BIN, else Debian's /usr/sbin/pgbouncer, else from PATH. */
export function findPgBouncer () {
  if (process.env.PGBOUNCER_BIN) return process.env.PGBOUNCER_BIN
  if (existsSync('/usr/sbin/pgbouncer')) return '/usr/sbin/pgbouncer'
  const r = spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' })
  if (r.status === 0 && r.stdout.trim() !== '') return r.stdout.trim()
  throw new Error('pgbouncer not found: install it (apt-get install pgbouncer) or set PGBOUNCER_BIN')
}

async function accepts (port) {
  return await new Promise(resolve => {
    const s = connect(port, '127.0.0.1', () => { s.destroy(); resolve(true) })
    s.once('error', () => resolve(false))
  })
}

/**
 * The pooling settings of docs/how-to/pgbouncer.md's pgbouncer.ini (its first ini block): what
 * operators copy is what every test runs through. Addresses, authentication and the admin users are
 * the machine's own (below).
 */
const HOWTO_SETTINGS = (() => {
  const page = readFileSync(new URL('../docs/how-to/pgbouncer.md', import.meta.url), 'utf8')
  const block = /```ini\n([^]*?)```/.exec(page)?.[1]
  if (block === undefined) throw new Error('docs/how-to/pgbouncer.md has no ini block')
  const wanted = ['pool_mode', 'ignore_startup_parameters', 'default_pool_size', 'server_login_retry', 'query_wait_timeout']
  const found = Object.fromEntries([...block.matchAll(/^(\w+) = (.+)$/gm)].map(m => [m[1], m[2]]).filter(([k]) => wanted.includes(k)))
  const lacking = wanted.filter(k => !(k in found))
  if (lacking.length > 0) throw new Error(`docs/how-to/pgbouncer.md's pgbouncer.ini lacks ${lacking.join(', ')}`)
  return found
})()

/** PgBouncer's quoting for userlist.txt: "…" with " doubled. */
const quote = (s) => `"${s.replaceAll('"', '""')}"`

/**
 * Starts PgBouncer in front of the server `serverUrl` points at (its host, port, user and password;
 * the database part is ignored: every database is served). Returns { url, port, dir, stop(),
 * start(), pids(), destroy() }: `url` is `serverUrl` with the pooler's port; stop() shuts it down at once
 * (clients are disconnected), start() brings it back on the same port, destroy() stops it and
 * deletes its files (destroyNow() likewise, without waiting, for an 'exit' handler). `settings` adds
 * or overrides pgbouncer.ini keys.
 */
export async function startPgBouncer (serverUrl, settings = {}) {
  const bin = findPgBouncer()
  const server = new URL(serverUrl)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-pgbouncer-'))
  const port = await freePort()
  const user = decodeURIComponent(server.username || 'postgres')
  const password = decodeURIComponent(server.password)
  // Clients are trusted (loopback only, throwaway); the password, when the server wants one, is the
  // one PgBouncer logs in with, read from the userlist.
  writeFileSync(join(dir, 'userlist.txt'), `${quote(user)} ${quote(password)}\n`, { mode: 0o600 })
  const ini = {
    ...HOWTO_SETTINGS,
    listen_addr: '127.0.0.1',
    listen_port: port,
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'userlist.txt'),
    // The whole suite's servers share this pooler: more clients than one deployment's N x PG_POOL_MAX.
    max_client_conn: 2000,
    // Databases dropped by the tests do not linger as pools.
    autodb_idle_timeout: 10,
    logfile: join(dir, 'pgbouncer.log'),
    pidfile: join(dir, 'pgbouncer.pid'),
    ...settings
  }
  const text = `[databases]\n* = host=${server.hostname.replace(/^\[|\]$/g, '')} port=${server.port || 5432}\n\n[pgbouncer]\n` +
    Object.entries(ini).map(([k, v]) => `${k} = ${v}`).join('\n') + '\n'
  writeFileSync(join(dir, 'pgbouncer.ini'), text)
  const owner = postgresOwner()
  if (owner !== undefined) {
    for (const f of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, f), owner.uid, owner.gid)
  }
  const [cmd, argv] = asPostgresUser(bin, [join(dir, 'pgbouncer.ini')])
  let child
  let exited

  async function start () {
    child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] })
    let log = ''
    child.stderr.on('data', (d) => { log = (log + d).slice(-4000) })
    exited = new Promise(resolve => child.once('exit', resolve))
    for (let i = 0; i < 100; i++) {
      if (await accepts(port)) return
      if (child.exitCode !== null) break
      await Promise.race([new Promise(resolve => setTimeout(resolve, 100)), exited])
    }
    await stop()
    throw new Error(`PgBouncer did not start on port ${port}: ${log}`)
  }

  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null

  /** PgBouncer's own process (as root the child is runuser), from its pid file. */
  function pids () {
    try { return [Number(readFileSync(join(dir, 'pgbouncer.pid'), 'utf8').trim())] } catch { return [] }
  }

  /** SIGTERM: immediate shutdown (SIGINT would wait for every client), to PgBouncer itself. */
  function terminate () {
    try { process.kill(pids()[0] ?? child.pid, 'SIGTERM') } catch {}
  }

  /** Immediate shutdown: every client connection is closed. */
  async function stop () {
    if (!running()) return
    terminate()
    await exited
  }

  async function destroy () {
    await stop()
    rmSync(dir, { recursive: true, force: true })
  }

  /** destroy() without waiting, for an 'exit' handler. */
  function destroyNow () {
    if (running()) terminate()
    rmSync(dir, { recursive: true, force: true })
  }

  try {
    await start()
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  const url = new URL(serverUrl)
  url.port = String(port)
  return { url: url.href, port, dir, start, stop, pids, destroy, destroyNow }
}
