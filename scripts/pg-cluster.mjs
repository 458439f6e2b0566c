// A throwaway PostgreSQL cluster for the tests: Debian's (or any local) PostgreSQL binaries, a data
// directory under the temp dir, TCP on 127.0.0.1 only, trust auth. Used by run-tests.mjs (one
// cluster for the whole run) and by tests that must stop and restart a server of their own.
// initdb refuses to run as root, so as root the server runs as the `postgres` OS user (created by
// Debian's postgresql package) through runuser.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { asPostgresUser, freePort, postgresOwner } from './lib/local.mjs'

/** The directory holding initdb and postgres: PG_BIN, else the newest /usr/lib/postgresql/N/bin, else pg_config's. */
export function findPgBin () {
  if (process.env.PG_BIN) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root).filter(v => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a))
    if (versions.length > 0) return join(root, versions[0], 'bin')
  }
  const r = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' })
  if (r.status === 0 && existsSync(join(r.stdout.trim(), 'initdb'))) return r.stdout.trim()
  throw new Error('PostgreSQL server binaries not found: install postgresql (apt-get install postgresql) or set PG_BIN')
}

function run (bin, args) {
  const [cmd, argv] = asPostgresUser(bin, args)
  const r = spawnSync(cmd, argv, { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.stdout}`)
  return r.stdout
}

/**
 * Creates and starts a cluster. Returns { url, port, dir, stop(), start() }: url is the admin
 * connection (user postgres, database postgres); stop() is a fast shutdown (clients are
 * disconnected), start() brings it back on the same port; pids() lists the server's processes,
 * signal(sig) reaches every one (SIGSTOP freezes it); destroy() stops it and deletes its files;
 * destroyNow() does so synchronously and at once (immediate shutdown), for an 'exit' handler, where
 * nothing can be awaited. With `password`, the postgres user gets it and TCP logins must give it
 * (scram-sha-256); url then carries it.
 * @param {{ maxConnections?: number, password?: string }} [opts]
 */
export async function startCluster ({ maxConnections = 300, password } = {}) {
  const bin = findPgBin()
  const base = mkdtempSync(join(tmpdir(), 'petstore-pg-'))
  const dir = join(base, 'data')
  const owner = postgresOwner()
  if (owner !== undefined) chownSync(base, owner.uid, owner.gid)
  const auth = ['--auth=trust']
  if (password !== undefined) {
    const pwfile = join(base, 'pwfile')
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 })
    if (owner !== undefined) chownSync(pwfile, owner.uid, owner.gid)
    auth.push('--auth-host=scram-sha-256', `--pwfile=${pwfile}`)
  }
  run(join(bin, 'initdb'), ['-D', dir, '-U', 'postgres', ...auth, '--encoding=UTF8', '--locale=C', '--no-instructions'])
  const port = await freePort()
  const url = `postgres://postgres${password === undefined ? '' : `:${encodeURIComponent(password)}`}@127.0.0.1:${port}/postgres`
  let child

  async function start () {
    const [cmd, argv] = asPostgresUser(join(bin, 'postgres'), [
      '-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=',
      '-c', `max_connections=${maxConnections}`, '-c', 'fsync=on', '-c', 'synchronous_commit=on'
    ])
    child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] })
    let log = ''
    child.stderr.on('data', (d) => { log = (log + d).slice(-4000) })
    const exited = new Promise(resolve => child.once('exit', resolve))
    for (let i = 0; i < 300; i++) {
      const r = spawnSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-q'])
      if (r.status === 0) return
      if (child.exitCode !== null) break
      await Promise.race([new Promise(resolve => setTimeout(resolve, 100)), exited])
    }
    throw new Error(`PostgreSQL did not start on port ${port}: ${log}`)
  }

  async function stop () {
    if (child === undefined || child.exitCode !== null) return
    const exited = new Promise(resolve => child.once('exit', resolve))
    // pg_ctl fails when the server is already going (e.g. Ctrl-C reached the whole process group).
    try {
      run(join(bin, 'pg_ctl'), ['stop', '-D', dir, '-m', 'fast', '-w'])
    } catch {
      child.kill('SIGINT')
    }
    await exited
  }

  /** The postmaster and its children (backends, WAL writer, checkpointer…), first the postmaster. */
  function pids () {
    const postmaster = Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0])
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
      .split('\n').map(Number).filter(n => n > 0)
    return [postmaster, ...children]
  }

  /** Sends a signal to the server and all its processes (SIGSTOP to freeze it, SIGCONT to thaw). */
  function signal (sig) {
    const all = pids()
    const postmaster = all[0]
    for (const pid of all) process.kill(pid, sig)
    // runuser stops itself when its child stops (job control) and waits for a SIGCONT of its own.
    if (sig === 'SIGCONT' && child !== undefined && child.pid !== undefined && child.pid !== postmaster) process.kill(child.pid, 'SIGCONT')
  }

  async function destroy () {
    await stop()
    rmSync(base, { recursive: true, force: true })
  }

  function destroyNow () {
    if (child !== undefined && child.exitCode === null) {
      const [cmd, argv] = asPostgresUser(join(bin, 'pg_ctl'), ['stop', '-D', dir, '-m', 'immediate', '-w'])
      spawnSync(cmd, argv, { stdio: 'ignore' })
    }
    rmSync(base, { recursive: true, force: true })
  }

  try {
    await start()
  } catch (err) {
    rmSync(base, { recursive: true, force: true })
    throw err
  }
  return { url, port, dir, start, stop, signal, pids, destroy, destroyNow }
}
