// What the throwaway servers of the tests and benches (PostgreSQL, PgBouncer, the service) share:
// a free loopback port, and running a binary as the `postgres` OS user when this process is root
// (initdb, postgres and pgbouncer all refuse to run as root; Debian's postgresql package creates
// that user).
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/**
 * A loopback port nothing listens on right now, for a server started later (a child process, a
 * container). Taken outside the kernel's ephemeral range where it can be read: a port the kernel
 * hands out (a listen on port 0, the local end of every outgoing connection) is then never one of
 * these, so the parallel tests' own servers and clients cannot take it before the later bind, which
 * for a container started after its dependencies can be a minute. Elsewhere, a port the kernel picks.
 */
export async function freePort () {
  const range = outsideEphemeral()
  if (range === undefined) return await kernelPort()
  const [from, to] = range
  for (let tries = 0; tries < 50; tries++) {
    const port = from + Math.floor(Math.random() * (to - from + 1))
    if (await canListen(port)) return port
  }
  throw new Error(`no free loopback port found in ${from}–${to}`)
}

/** A span of at least 1,000 ports below (else above) the kernel's ephemeral range; undefined where the range cannot be read. */
function outsideEphemeral () {
  let low, high
  try {
    [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
  } catch {
    return undefined
  }
  if (!Number.isInteger(low) || !Number.isInteger(high)) return undefined
  if (low - 1 - 10_000 >= 1000) return [10_000, low - 1]
  if (65_535 - (high + 1) >= 1000) return [high + 1, 65_535]
  return undefined
}

/** @param {number} port */
async function canListen (port) {
  return await new Promise(resolve => {
    const srv = createServer()
    srv.unref()
    srv.once('error', () => resolve(false))
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)))
  })
}

/** @returns {Promise<number>} */
async function kernelPort () {
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
