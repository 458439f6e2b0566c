/*
 * The container tests' tools: podman as root (runc, cgroupfs: /etc/containers/containers.conf, which
 * .ci/run writes), images built here because no image registry is reachable. The official base
 * node:24-bookworm-slim and the images the compose files name by default are stand-ins built locally
 * from Debian's packages and the npm registry's official Node (test/deploy/stand-ins/), tagged with
 * the official names, so the Dockerfile and the compose files build and run unchanged
 * (`--pull=never`). Builds run under a lock: two test files never build at once, and the second
 * finds the first's image (the stand-ins by tag, the service image in podman's layer cache).
 */
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { ROOT } from './process.js'

const exec = promisify(execFile)

export const BASE_IMAGE = 'docker.io/library/node:24-bookworm-slim'
/** The host's CA bundle: inside a build, the npm registry is reached through a TLS-inspecting proxy. */
const CA = '/etc/ssl/certs/ca-certificates.crt'
const STAND_INS = join(ROOT, 'test/deploy/stand-ins')
const LOCK = '/tmp/petstore-container-build.lock'
/** How long a dangling image is kept by sweepLeftovers. */
const DANGLING_KEPT = '3h'

/** Runs a command; its stdout, or an error carrying its stderr. */
export async function run (cmd: string, args: string[], opts: { cwd?: string, env?: NodeJS.ProcessEnv, timeoutMs?: number } = {}): Promise<string> {
  try {
    const { stdout } = await exec(cmd, args, { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, maxBuffer: 64 * 1024 * 1024, timeout: opts.timeoutMs ?? 600_000 })
    return stdout
  } catch (err) {
    const e = err as { stderr?: string, stdout?: string, message: string }
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}${e.stdout ?? ''}`.slice(0, 8000))
  }
}

export async function podman (...args: string[]): Promise<string> {
  return await run('podman', args)
}

/** A podman command's stdout and stderr together (a container's logs, a debug trace). */
export async function podmanOutput (...args: string[]): Promise<string> {
  const { stdout, stderr } = await exec('podman', args, { maxBuffer: 64 * 1024 * 1024 })
  return stdout + stderr
}

export async function logs (name: string): Promise<string> {
  return await podmanOutput('logs', name)
}

/**
 * Removes an image tag. Under the build lock: a build reuses the layers of an identical image as its
 * cache, and removing that image while the build runs loses them ("layer not known").
 */
export async function removeImage (...tags: string[]): Promise<void> {
  await run('flock', [LOCK, 'podman', 'rmi', '--force', ...tags])
}

/** `podman build` of the project's Dockerfile, as the docs tell a team to run it. */
export async function buildServiceImage (tag: string): Promise<void> {
  await sweepLeftovers()
  await ensureBaseImage()
  const secret = existsSync(CA) ? ['--secret', `id=ca,src=${CA}`] : []
  await run('flock', [LOCK, 'podman', 'build', '--pull=never', ...secret, '--tag', tag, ROOT])
}

/** The stand-in for node:24-bookworm-slim (kept once built: debootstrap takes about a minute). */
export async function ensureBaseImage (): Promise<void> {
  const { petstore } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { petstore: { node: string } }
  await run('flock', [LOCK, 'sh', join(STAND_INS, 'base.sh'), BASE_IMAGE, petstore.node])
}

/**
 * One image FROM the stand-in base with Debian's PostgreSQL, PgBouncer, Redis and HAProxy, tagged
 * with each name given (the compose files' defaults): its entrypoint does what the official images'
 * do with the same commands and variables (test/deploy/stand-ins/services/).
 */
export async function ensureServiceStandIns (tags: string[]): Promise<void> {
  await ensureBaseImage()
  const missing = []
  for (const tag of tags) if (!await exists(tag)) missing.push(tag)
  if (missing.length === 0) return
  const [first, ...rest] = missing
  await run('flock', [LOCK, 'podman', 'build', '--pull=never', '--tag', first!, join(STAND_INS, 'services')])
  for (const tag of rest) await podman('tag', first!, tag)
}

async function exists (image: string): Promise<boolean> {
  try {
    await podman('image', 'exists', image)
    return true
  } catch {
    return false
  }
}

/** The prefix of every container, volume, network, compose project and image tag a test makes, then its pid. */
export const TEST_PREFIX = 'petstore-test-'

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Removes what test processes that no longer run left behind (a test file killed before its
 * cleanups ran): every name and tag carries its test process's pid after TEST_PREFIX. Then the
 * dangling images older than DANGLING_KEPT (the build stages of images whose tags were removed:
 * untagged and used by nothing, as `podman image prune` defines them, and as large as the image),
 * under the build lock; younger ones stay, as the cache of the builds of the run under way.
 */
export async function sweepLeftovers (): Promise<void> {
  const dead = (name: string): boolean => {
    const m = new RegExp(`${TEST_PREFIX}(\\d+)-`).exec(name)
    return m !== null && !alive(Number(m[1]))
  }
  const list = async (...args: string[]): Promise<string[]> => (await podman(...args)).split('\n').filter(n => n !== '' && dead(n))
  const containers = await list('ps', '--all', '--format', '{{.Names}}')
  if (containers.length > 0) await podman('rm', '--force', '--volumes', '--time', '0', ...containers)
  const volumes = await list('volume', 'ls', '--format', '{{.Name}}')
  if (volumes.length > 0) await podman('volume', 'rm', '--force', ...volumes)
  const networks = await list('network', 'ls', '--format', '{{.Name}}')
  if (networks.length > 0) await podman('network', 'rm', '--force', ...networks)
  const images = await list('images', '--format', '{{.Repository}}:{{.Tag}}')
  if (images.length > 0) await removeImage(...images)
  await run('flock', [LOCK, 'podman', 'image', 'prune', '--force', '--filter', `until=${DANGLING_KEPT}`])
}

/** Polls url until it answers 200 (a container's published port), or throws after timeoutMs. */
export async function waitFor200 (url: string, timeoutMs: number, describe: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = ''
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) })
      await res.arrayBuffer()
      if (res.status === 200) return
      last = `status ${res.status}`
    } catch (err) {
      last = (err as Error).message
    }
    await new Promise(resolve => setTimeout(resolve, 250))
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${last})\n${await describe().catch(e => String(e))}`)
}
