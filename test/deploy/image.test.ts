// requires: podman, debootstrap
/*
 * The root Dockerfile, built with podman on the stand-in of its official base (test/helpers/containers.ts)
 * and run as a team runs it (docs/how-to/deploy.md): read-only root filesystem with a tmpfs /tmp, the
 * store on a volume at /data, traffic to a port published on 127.0.0.1 only.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { onCleanup } from '../helpers/cleanup.js'
import { BASE_IMAGE, buildServiceImage, logs, podman, podmanOutput, removeImage, TEST_PREFIX, waitFor200 } from '../helpers/containers.js'
import { ROOT } from '../helpers/process.js'
import { freePort } from '../helpers/server.js'

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string, license: string }
const defaults = loadConfig({}, ROOT)
/** What an orchestrator must allow between SIGTERM and SIGKILL (deploy/kubernetes sets at least this). */
const GRACE_S = Math.ceil((defaults.shutdownDrainMs + defaults.shutdownTimeoutMs) / 1000)
const MAX_ADDED_BYTES = 120 * 1000 * 1000

async function imageSize (image: string): Promise<number> {
  return Number((await podman('image', 'inspect', '--format', '{{.Size}}', image)).trim())
}

describe('the container image (Dockerfile, built and run with podman)', () => {
  it('builds, hands out the first key in /data, serves as node from a read-only root, stops with 0 on SIGTERM and keeps its store on the volume', { timeout: 900_000 }, async (t) => {
    const id = `${TEST_PREFIX}${process.pid}-${randomBytes(3).toString('hex')}`
    const image = `localhost/${id}`
    const volume = id
    onCleanup(t, () => removeImage(image).catch(() => {}))
    await buildServiceImage(image)

    // What the image adds to its base, and how it describes itself.
    const added = await imageSize(image) - await imageSize(BASE_IMAGE)
    t.diagnostic(`image adds ${(added / 1e6).toFixed(1)} MB to ${BASE_IMAGE}`)
    assert.ok(added > 0 && added <= MAX_ADDED_BYTES, `the image adds ${added} bytes to its base (at most ${MAX_ADDED_BYTES})`)
    const config = JSON.parse(await podman('image', 'inspect', '--format', '{{json .Config}}', image)) as { User: string, Labels: Record<string, string>, Cmd: string[] }
    assert.equal(config.User, 'node')
    assert.equal(config.Labels['org.opencontainers.image.version'], pkg.version)
    assert.equal(config.Labels['org.opencontainers.image.licenses'], pkg.license)
    assert.deepEqual(config.Cmd, ['node', '/app/dist/server.js'])

    await podman('volume', 'create', volume)
    onCleanup(t, () => podman('volume', 'rm', '--force', volume).catch(() => {}))
    const names: string[] = []
    onCleanup(t, async () => { for (const n of names) await podman('rm', '--force', '--time', '0', n).catch(() => {}) })
    async function start (): Promise<{ name: string, url: string }> {
      const name = `${id}-${names.length + 1}`
      names.push(name)
      const port = await freePort()
      await podman('run', '--detach', '--name', name, '--read-only', '--tmpfs', '/tmp', '--volume', `${volume}:/data`,
        '--publish', `127.0.0.1:${port}:8080`, image)
      const url = `http://127.0.0.1:${port}`
      await waitFor200(`${url}/readyz`, 60_000, () => logs(name))
      return { name, url }
    }

    const first = await start()
    // The server itself is PID 1 (no shell or init in between: SIGTERM reaches it), as user node.
    assert.equal((await podman('exec', first.name, 'cat', '/proc/1/cmdline')).split('\0').filter(Boolean).join(' '), 'node /app/dist/server.js')
    assert.equal((await podman('exec', first.name, 'id', '-u')).trim(), '1000')
    // The root filesystem is read-only, /data is the volume and the node user's.
    await assert.rejects(podman('exec', first.name, 'touch', '/app/x'), /Read-only file system/)
    // The compile cache the build made is the one user node reads (Node keeps one per user id).
    const cache = await podmanOutput('exec', '--env', 'NODE_DEBUG_NATIVE=COMPILE_CACHE', first.name, 'node', '--input-type=module', '-e',
      'await (await import("/app/dist/server.js")).loadService()')
    assert.match(cache, /V8 code cache for ESM file:\/\/\/app\/dist\/start-server\.js was accepted/)
    const key = (await podman('exec', first.name, 'cat', '/data/first-api-key.txt')).trim()
    assert.match(key, /^\S{20,}$/)
    assert.equal((await podman('exec', first.name, 'stat', '-c', '%a %U', '/data/first-api-key.txt')).trim(), '600 node')
    assert.doesNotMatch(await logs(first.name), new RegExp(key), 'the key is not in the logs')
    // The start-up line names the CLI as it runs here: through the container, not npx.
    assert.match(await logs(first.name), /No API keys existed.*Make more with: docker exec <container> petstore keys create --name NAME/)

    // `petstore` on PATH works against the same store: a key it makes is accepted by the server.
    const cliKey = (await podman('exec', first.name, 'petstore', 'keys', 'create', '--name', 'ops')).trim()
    const created = await fetch(`${first.url}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cliKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Boxed', categoryId: 7, status: 'available' })
    })
    assert.equal(created.status, 201, await created.clone().text())
    const pet = await created.json() as { id: number }
    const read = await fetch(`${first.url}/v1/pets/${pet.id}`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(read.status, 200)
    // The CLI checks a deployment against the document the image ships (openapi/openapi.json).
    const conformance = JSON.parse(await podman('exec', first.name, 'petstore', 'conformance', '--base-url', 'http://127.0.0.1:8080', '--key', cliKey, '--json')) as { conforms: boolean, failed: number }
    assert.deepEqual({ conforms: conformance.conforms, failed: conformance.failed }, { conforms: true, failed: 0 })

    // `podman stop` sends SIGTERM: the server drains and exits 0 well within the grace period.
    const t0 = Date.now()
    await podman('stop', '--time', String(GRACE_S), first.name)
    const stopMs = Date.now() - t0
    t.diagnostic(`podman stop took ${stopMs} ms (grace ${GRACE_S} s)`)
    assert.equal((await podman('inspect', '--format', '{{.State.ExitCode}}', first.name)).trim(), '0')
    assert.ok(stopMs < GRACE_S * 1000, `stopped in ${stopMs} ms, before the ${GRACE_S} s grace period ran out`)
    assert.match(await logs(first.name), /shut down cleanly/)

    // A new container on the same volume has the pet and the keys, and hands out no new key.
    const second = await start()
    const again = await fetch(`${second.url}/v1/pets/${pet.id}`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(again.status, 200)
    assert.deepEqual(await again.json(), { id: pet.id, name: 'Boxed', categoryId: 7, status: 'available' })
    assert.equal((await podman('exec', second.name, 'cat', '/data/first-api-key.txt')).trim(), key)
    assert.doesNotMatch(await logs(second.name), /No API keys existed/)
  })
})
