// requires: podman, debootstrap, podman-compose, docker-compose
/*
 * The compose files a team copies (compose.yaml, compose.scale.yaml), checked by docker-compose and
 * run by podman-compose with the service image built from the Dockerfile and, for PostgreSQL,
 * PgBouncer, Redis and HAProxy, stand-ins built from Debian's packages (the files' image variables
 * point at them). podman-compose 1.0.3 starts services in dependency order but does not wait on
 * `depends_on` conditions, so the test brings the services up in the order the conditions give and
 * waits on each one's own health check (`podman healthcheck run`: the file's command, in the
 * container). Every container, volume and network of a project is removed at the end, whatever failed.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { onCleanup } from '../helpers/cleanup.js'
import { buildServiceImage, ensureServiceStandIns, logs, podman, removeImage, run, TEST_PREFIX } from '../helpers/containers.js'
import { ROOT } from '../helpers/process.js'
import { freePort } from '../helpers/server.js'

const STAND_IN = 'localhost/petstore-stand-in-services:bookworm'

interface Project {
  name: string
  compose: (...args: string[]) => Promise<string>
  container: (service: string) => string
}

/** A podman-compose project over `files`, torn down (containers, volumes, network) when the test ends. */
function project (t: TestContext, files: string[], env: Record<string, string>): Project {
  const name = `${TEST_PREFIX}${process.pid}-${randomBytes(3).toString('hex')}`
  const label = `label=io.podman.compose.project=${name}`
  onCleanup(t, async () => {
    const ids = (await podman('ps', '--all', '--quiet', '--filter', label)).split('\n').filter(Boolean)
    if (ids.length > 0) await podman('rm', '--force', '--volumes', '--time', '0', ...ids)
    const volumes = (await podman('volume', 'ls', '--quiet', '--filter', label)).split('\n').filter(Boolean)
    if (volumes.length > 0) await podman('volume', 'rm', '--force', ...volumes)
    const networks = (await podman('network', 'ls', '--quiet', '--filter', label)).split('\n').filter(Boolean)
    if (networks.length > 0) await podman('network', 'rm', '--force', ...networks)
  })
  return {
    name,
    compose: async (...args) => await run('podman-compose', ['--project-name', name, ...files.flatMap(f => ['--file', f]), ...args], { env: { ...process.env, ...env } }),
    container: (service) => `${name}_${service}_1`
  }
}

/** Starts services (without their dependencies, which the caller started) and waits for their health checks. */
async function up (p: Project, ...services: string[]): Promise<void> {
  await p.compose('up', '--detach', '--no-build', '--no-deps', ...services)
}

async function healthy (p: Project, service: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      await podman('healthcheck', 'run', p.container(service))
      return
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${service} not healthy within ${timeoutMs} ms: ${(err as Error).message}\n${await logs(p.container(service)).catch(String)}`)
    }
    await new Promise(resolve => setTimeout(resolve, 500))
  }
}

async function createPet (base: string, key: string, name: string): Promise<Response> {
  return await fetch(`${base}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, categoryId: 1, status: 'available' }),
    signal: AbortSignal.timeout(10_000)
  })
}

async function getPet (base: string, key: string, id: string | number): Promise<Response> {
  return await fetch(`${base}/v1/pets/${id}`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) })
}

describe('compose files', () => {
  it('docker-compose config accepts compose.yaml and compose.scale.yaml', async () => {
    await run('docker-compose', ['--file', 'compose.yaml', 'config', '--quiet'])
    await run('docker-compose', ['--file', 'compose.scale.yaml', 'config', '--quiet'], { env: { ...process.env, POSTGRES_PASSWORD: 'checked' } })
    // The scale-out file refuses to start without a database password rather than use a default one.
    await assert.rejects(run('docker-compose', ['--file', 'compose.scale.yaml', 'config', '--quiet'], { env: { ...process.env, POSTGRES_PASSWORD: '' } }), /POSTGRES_PASSWORD/)
  })

  it('compose.yaml: one instance on SQLite hands out its first key on the volume, serves, and keeps the store across down and up', { timeout: 900_000 }, async (t) => {
    const image = `localhost/${TEST_PREFIX}${process.pid}-compose`
    onCleanup(t, () => removeImage(image).catch(() => {}))
    await buildServiceImage(image)
    const port = await freePort()
    const p = project(t, [join(ROOT, 'compose.yaml')], { PETSTORE_IMAGE: image, PETSTORE_PORT: String(port) })
    const base = `http://127.0.0.1:${port}`

    await up(p, 'petstore')
    await healthy(p, 'petstore')
    const key = (await podman('exec', p.container('petstore'), 'cat', '/data/first-api-key.txt')).trim()
    const created = await createPet(base, key, 'Composed')
    assert.equal(created.status, 201)
    const { id } = await created.json() as { id: number }

    // down keeps named volumes: a new container finds the pet and the key.
    await p.compose('down', '--timeout', '20')
    await up(p, 'petstore')
    await healthy(p, 'petstore')
    const read = await getPet(base, key, id)
    assert.equal(read.status, 200)
    assert.equal((await read.json() as { name: string }).name, 'Composed')
  })

  it('compose.scale.yaml: two instances behind HAProxy on PostgreSQL through PgBouncer with Redis; one created, the other reads; one killed, nothing acknowledged lost', { timeout: 900_000 }, async (t) => {
    const image = `localhost/${TEST_PREFIX}${process.pid}-scale`
    onCleanup(t, () => removeImage(image).catch(() => {}))
    await buildServiceImage(image)
    await ensureServiceStandIns([STAND_IN])

    // The instances' ports, published on loopback for the test only (the file publishes the balancer alone).
    const [lbPort, port1, port2] = [await freePort(), await freePort(), await freePort()]
    const scratch = mkdtempSync(join(tmpdir(), 'petstore-compose-'))
    onCleanup(t, () => rmSync(scratch, { recursive: true, force: true }))
    const override = join(scratch, 'ports.yaml')
    writeFileSync(override, `services:\n  app1:\n    ports: ["127.0.0.1:${port1}:8080"]\n  app2:\n    ports: ["127.0.0.1:${port2}:8080"]\n`)
    const p = project(t, [join(ROOT, 'compose.scale.yaml'), override], {
      PETSTORE_IMAGE: image,
      PETSTORE_PORT: String(lbPort),
      POSTGRES_PASSWORD: randomBytes(12).toString('hex'),
      POSTGRES_IMAGE: STAND_IN,
      PGBOUNCER_IMAGE: STAND_IN,
      REDIS_IMAGE: STAND_IN,
      HAPROXY_IMAGE: STAND_IN
    })

    // The order the file's depends_on conditions give.
    await up(p, 'postgres', 'redis')
    await healthy(p, 'postgres')
    await healthy(p, 'redis')
    await up(p, 'pgbouncer', 'migrate')
    assert.equal((await podman('wait', p.container('migrate'))).trim(), '0', await logs(p.container('migrate')))
    assert.match(await logs(p.container('migrate')), /applied migrations: 1/)
    await up(p, 'app1')
    await healthy(p, 'app1')
    await up(p, 'app2')
    await healthy(p, 'app2')
    await up(p, 'lb')
    const [app1, app2, lb] = [port1, port2, lbPort].map(n => `http://127.0.0.1:${n}`) as [string, string, string]

    // The first start on the empty store (app1's) wrote the key to the shared volume; app2 made none.
    const key = (await podman('exec', p.container('app2'), 'cat', '/data/first-api-key.txt')).trim()
    assert.match(await logs(p.container('app1')), /No API keys existed/)
    assert.doesNotMatch(await logs(p.container('app2')), /No API keys existed/)
    assert.match(await logs(p.container('app1')), /on pgbouncer:6432 as petstore/)

    // Created through one instance, read through the other and through the balancer.
    const created = await createPet(app1, key, 'Scaled')
    assert.equal(created.status, 201)
    const { id } = await created.json() as { id: number }
    for (const base of [app2, lb]) assert.equal((await getPet(base, key, id)).status, 200, base)

    // Writers through the balancer; app1 is killed (SIGKILL) while they run. Every create answered
    // 201 must be readable afterwards through app2, with its name.
    const acknowledged = new Map<string, string>()
    let failed = 0
    let stop = false
    const writers = Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; !stop; i++) {
        const name = `w${w}-${i}`
        try {
          const res = await createPet(lb, key, name)
          if (res.status === 201) acknowledged.set(String((await res.json() as { id: number }).id), name)
          else { failed++; await res.arrayBuffer() }
        } catch {
          failed++
        }
      }
    })
    await new Promise(resolve => setTimeout(resolve, 1500))
    const before = acknowledged.size
    await podman('kill', '--signal', 'KILL', p.container('app1'))
    await new Promise(resolve => setTimeout(resolve, 3000))
    stop = true
    await Promise.all(writers)
    t.diagnostic(`${acknowledged.size} creates acknowledged (${before} before the kill), ${failed} failed`)
    assert.ok(before > 0 && acknowledged.size > before, 'creates were acknowledged before and after the kill')
    for (const [petId, name] of acknowledged) {
      const res = await getPet(app2, key, petId)
      assert.equal(res.status, 200, `pet ${petId} (${name}) acknowledged, then missing`)
      assert.equal((await res.json() as { name: string }).name, name)
    }
  })
})
