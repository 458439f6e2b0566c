// What the throwaway servers of the tests and benches (PostgreSQL, PgBouncer, the service) share:
// a free loopback port, and running a binary as the `postgres` OS user when this process is root
// (initdb, postgres and pgbouncer all refuse to run as root; Debian's postgresql package creates
// that user).
import { execFileSync } from 'node:child_process'
import { createServer } from 'node:net'

/** A TCP port free on 127.0.0.1 at the time of asking. */
export async function freePort () {
  return await new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address())
      srv.close(() => resolve(port))
    })
  })
}

export const isRoot = typeof process.getuid === 'function' && process.getuid() === 0

/** The uid and gid files must belong to for the `postgres` user to use them; undefined when not root. */
export function postgresOwner () {
  if (!isRoot) return undefined
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
  return { uid, gid }
}

/**
 * [command, argv] running `bin args` as the `postgres` user when root (through runuser), as this
 * user otherwise.
 * @param {string} bin
 * @param {string[]} args
 * @returns {[string, string[]]}
 */
export function asPostgresUser (bin, args) {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args]
}
