// requires: podman, debootstrap, podman-compose, docker-compose
/*
 * The compose files a team copies (compose.yaml, compose.scale.yaml), checked by docker-compose and
 * run by podman-compose with the service image built from the Dockerfile and, for PostgreSQL,
 * PgBouncer, Redis and HAProxy, stand-ins built from Debian's packages (the files' image variables
 * point at them). podman-compose 1.0.3 starts services in dependency order but does not wait on
 * `depends_on` conditions, so the test brings the services up in the order the conditions give and
 * waits on each one's own health check (`podman healthcheck run`: the file's command, in the
 * container). It passes no stop_grace_period (stops get -t 20) and `up -d --no-deps` does not recreate
 * a running container (a replacement is stop, rm, up), as docs/how-to/deploy.md says. Every container,
 * volume and network of a project is removed at the end, whatever failed.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { onCleanup } from '../helpers/cleanup.js'
import { buildServiceImage, ensureServiceStandIns, logs, podman, podmanOutput, removeImage, run, TEST_PREFIX } from '../helpers/containers.js'
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
      if (Date.now() > deadline) {
        const state = await podmanOutput('inspect', '--format', '{{.State.Status}} {{.State.Error}}', p.container(service)).catch(String)
        throw new Error(`${service} not healthy within ${timeoutMs} ms (state: ${state.trim()}): ${(err as Error).message}\n${await logs(p.container(service)).catch(String)}`)
      }
    }
    await new Promise(resolve => setTimeout(resolve, 500))
  }
}

/** Whether the balancer has sent a request (not a health check) to the service's container since then: its access log. */
async function servedThroughBalancer (p: Project, service: string, since: Date): Promise<boolean> {
  return (await podmanOutput('logs', '--since', since.toISOString(), p.container(service))).includes('"url":"/v1/pets')
}

/** Polls cond every 250 ms for at most a minute. */
async function waitUntil (cond: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 60_000
  while (!await cond()) {
    if (Date.now() > deadline) throw new Error(`not within a minute: ${what}`)
    await new Promise(resolve => setTimeout(resolve, 250))
  }
}

/** The drill's clients through the balancer. */
const WRITERS = 4
const READERS = 2

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
    // The hint names the CLI as this file runs it (PETSTORE_CLI), not the image's default.
    assert.match(await logs(p.container('petstore')), /No API keys existed.*Make more with: docker compose exec petstore petstore keys create --name NAME/)
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

  it('compose.scale.yaml: two instances behind HAProxy on PostgreSQL through PgBouncer with Redis; the failover drill under load (kill -9 and start again, graceful stops, a recreate), every answer counted', { timeout: 900_000 }, async (t) => {
    const image = `localhost/${TEST_PREFIX}${process.pid}-scale`
    onCleanup(t, () => removeImage(image).catch(() => {}))
    await buildServiceImage(image)
    await ensureServiceStandIns([STAND_IN])

    // The instances' ports, published on loopback for the test only (the file publishes the balancer
    // alone), and no per-key rate limit: the drill's clients use one key, faster than its default limit.
    const [lbPort, port1, port2] = [await freePort(), await freePort(), await freePort()]
    const scratch = mkdtempSync(join(tmpdir(), 'petstore-compose-'))
    onCleanup(t, () => rmSync(scratch, { recursive: true, force: true }))
    const override = join(scratch, 'test.yaml')
    writeFileSync(override, 'services:\n' + [['app1', port1], ['app2', port2]].map(([service, port]) =>
      `  ${service}:\n    ports: ["127.0.0.1:${port}:8080"]\n    environment:\n      RATE_LIMIT_MAX: "0"\n`).join(''))
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
    // Its log line names the CLI in the container's form.
    const key = (await podman('exec', p.container('app2'), 'cat', '/data/first-api-key.txt')).trim()
    assert.match(await logs(p.container('app1')), /No API keys existed.*Make more with: docker compose -f compose.scale.yaml exec app1 petstore keys create --name NAME/)
    assert.doesNotMatch(await logs(p.container('app2')), /No API keys existed/)
    assert.match(await logs(p.container('app1')), /on pgbouncer:6432 as petstore/)

    // Created through one instance, read through the other and through the balancer.
    const created = await createPet(app1, key, 'Scaled')
    assert.equal(created.status, 201)
    const { id } = await created.json() as { id: number }
    for (const base of [app2, lb]) assert.equal((await getPet(base, key, id)).status, 200, base)
    await waitUntil(() => servedThroughBalancer(p, 'app1', new Date(0)), 'app1 in the rotation')
    await waitUntil(() => servedThroughBalancer(p, 'app2', new Date(0)), 'app2 in the rotation')

    // Writers and readers through the balancer for the whole drill. Each answer is counted under the
    // step during which its request was sent.
    const acknowledged = new Map<string, string>()
    const ids: string[] = [String(id)]
    const sent = new Map<string, { ok: number, failed: string[] }>()
    let step = 'before the kill'
    let stop = false
    const count = (during: string, answer: string | number): void => {
      const tally = sent.get(during) ?? { ok: 0, failed: [] }
      sent.set(during, tally)
      if (typeof answer === 'number' && answer >= 200 && answer < 300) tally.ok++
      else tally.failed.push(String(answer))
    }
    const client = async (send: (i: number) => Promise<Response>, onOk: (res: Response) => Promise<void>): Promise<void> => {
      for (let i = 0; !stop; i++) {
        const during = step
        try {
          const res = await send(i)
          if (res.status >= 200 && res.status < 300) await onOk(res)
          else await res.arrayBuffer()
          count(during, res.status)
        } catch (err) {
          const cause = (err as { cause?: { code?: string } }).cause?.code
          count(during, `${(err as Error).message}${cause !== undefined ? ` (${cause})` : ''}`)
        }
        await new Promise(resolve => setTimeout(resolve, 10))
      }
    }
    const writers = Array.from({ length: WRITERS }, async (_, w) => await client(
      async (i) => await createPet(lb, key, `w${w}-${i}`),
      async (res) => {
        const pet = await res.json() as { id: number, name: string }
        acknowledged.set(String(pet.id), pet.name)
        ids.push(String(pet.id))
      }))
    const readers = Array.from({ length: READERS }, async (_, r) => await client(
      async (i) => i % 5 === 0
        ? await fetch(`${lb}/v1/pets?limit=20`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) })
        : await getPet(lb, key, ids[(i * 7919 + r) % ids.length]!),
      async (res) => { await res.arrayBuffer() }))
    const load = [...writers, ...readers]
    onCleanup(t, async () => { stop = true; await Promise.all(load) })
    const AROUND_THE_KILL = ['before the kill', 'app1 being killed', 'app1 killed, until ready again']
    const pause = async (ms: number): Promise<void> => await new Promise(resolve => setTimeout(resolve, ms))
    await pause(2000)

    // kill -9 app1 (its in-flight requests may fail), then start it again: a new container address.
    const address = async (service: string): Promise<string> =>
      (await podman('inspect', '--format', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', p.container(service))).trim()
    const killedAt = await address('app1')
    step = 'app1 being killed'
    await podman('kill', '--signal', 'KILL', p.container('app1'))
    step = 'app1 killed, until ready again'
    await pause(2000)
    await p.compose('start', 'app1')
    await healthy(p, 'app1')
    const restartedAt = await address('app1')
    let since = new Date()
    step = 'app1 ready again'
    await waitUntil(() => servedThroughBalancer(p, 'app1', since), 'the balancer sends to the restarted app1')

    // Graceful stop of app2 under load (stop_grace_period is not passed by podman-compose: -t), then
    // start it again.
    step = 'app2 stopping'
    await p.compose('stop', '--timeout', '20', 'app2')
    assert.equal((await podman('inspect', '--format', '{{.State.ExitCode}}', p.container('app2'))).trim(), '0')
    assert.match(await logs(p.container('app2')), /shut down cleanly/)
    step = 'app2 stopped'
    await pause(2000)
    step = 'app2 starting'
    await p.compose('start', 'app2')
    await healthy(p, 'app2')
    since = new Date()
    await waitUntil(() => servedThroughBalancer(p, 'app2', since), 'the balancer sends to the started app2')

    // The rolling upgrade's step for one instance, as deploy.md gives it for podman-compose: stop
    // (draining), remove, up without dependencies; a new container.
    step = 'app1 recreated'
    const oldId = (await podman('inspect', '--format', '{{.Id}}', p.container('app1'))).trim()
    await p.compose('stop', '--timeout', '20', 'app1')
    await podman('rm', p.container('app1'))
    await up(p, 'app1')
    await healthy(p, 'app1')
    assert.notEqual((await podman('inspect', '--format', '{{.Id}}', p.container('app1'))).trim(), oldId)
    since = new Date()
    await waitUntil(() => servedThroughBalancer(p, 'app1', since), 'the balancer sends to the recreated app1')
    step = 'after the drill'
    await pause(2000)
    stop = true
    await Promise.all(load)

    const summary = [...sent].map(([during, { ok, failed }]) => `${during}: ${ok} 2xx, ${failed.length} other${failed.length > 0 ? ` (${[...new Set(failed)].join(', ')})` : ''}`)
    t.diagnostic(`app1 at ${killedAt} before the kill, ${restartedAt} after; ${acknowledged.size} creates acknowledged; ${summary.join('; ')}`)
    for (const [during, { ok, failed }] of sent) {
      if (during !== 'app1 being killed') assert.ok(ok > 0, `requests answered while ${during}`)
      // Only requests in flight on app1 when it was killed may fail: at most one per client.
      if (AROUND_THE_KILL.includes(during)) continue
      assert.deepEqual(failed, [], `answers other than 2xx sent while ${during}`)
    }
    const killFailures = AROUND_THE_KILL.reduce((n, during) => n + (sent.get(during)?.failed.length ?? 0), 0)
    assert.ok(killFailures <= WRITERS + READERS, `${killFailures} failed around the kill, more than the ${WRITERS + READERS} requests that can be in flight`)

    // Every acknowledged create is there, with its name, through the balancer.
    const pending = [...acknowledged]
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
        const [petId, name] = next
        const res = await getPet(lb, key, petId)
        assert.equal(res.status, 200, `pet ${petId} (${name}) acknowledged, then missing`)
        assert.equal((await res.json() as { name: string }).name, name)
      }
    }))
  })
})
