import assert from 'node:assert/strict'
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { CLI_PATH, runCli, runServerToExit, startServer } from '../helpers/process.js'

const KEY = /psk_[A-Za-z0-9_-]{43}/

/** Waits (at most 30 s) until cond holds; fails showing what was seen. */
async function waitFor (cond: () => boolean, seen: () => string): Promise<void> {
  for (let i = 0; i < 300 && !cond(); i++) await sleep(100)
  assert.ok(cond(), seen())
}

describe('the compiled server, over HTTP (black box)', () => {
  it('serves the three operations to a newcomer: first-start key, a CLI key, create, list, get', async (t) => {
    const dir = tempDir(t)
    const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }
    const server = await startServer(t, env)

    // First start on an empty store, no terminal: one key, in a file only this user may read; the
    // JSON log says where (never the key), stdout holds nothing but JSON lines.
    const keyFile = join(dir, 'first-api-key.txt')
    await waitFor(() => server.stdout().includes('first-api-key.txt'), () => server.stdout())
    assert.equal(statSync(keyFile).mode & 0o777, 0o600)
    const firstKey = readFileSync(keyFile, 'utf8').trimEnd()
    assert.match(firstKey, /^psk_[A-Za-z0-9_-]{43}$/)
    const lines = server.stdout().trimEnd().split('\n')
    for (const line of lines) assert.equal(typeof JSON.parse(line), 'object', line)
    const told = lines.map(l => JSON.parse(l) as { msg: string, file?: string }).find(l => l.file !== undefined)
    assert.equal(told?.file, keyFile)
    assert.match(told?.msg ?? '', /Make more with: bin\/petstore keys create --name NAME/)
    assert.doesNotMatch(server.stdout() + server.stderr(), KEY)

    // A key made with the real CLI while the server runs: alone on one line of stdout.
    const made = await runCli(['keys', 'create', '--name', 'x'], env)
    assert.equal(made.code, 0, made.stderr)
    assert.match(made.stdout, /^psk_[A-Za-z0-9_-]{43}\n$/)
    const key = made.stdout.trim()

    for (const k of [firstKey, key]) {
      const res = await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${k}` } })
      assert.equal(res.status, 200)
      assert.deepEqual(await res.json(), [])
    }
    const auth = { authorization: `Bearer ${key}` }

    const created = await fetch(`${server.url}/v1/pets`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"name":"Rex","categoryId":9007199254740993,"status":"pending"}'
    })
    assert.equal(created.status, 201)
    const createdText = await created.text()
    const id = /^\{"id":(\d+),"name":"Rex","categoryId":9007199254740993,"status":"pending"\}$/.exec(createdText)?.[1]
    assert.ok(id, createdText)
    assert.equal(created.headers.get('location'), `/v1/pets/${id}`)
    const second = await fetch(`${server.url}/v1/pets`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"Tom","categoryId":2}'
    })
    assert.equal(second.status, 201)
    const secondId = (await second.json() as { id: number }).id

    const page = await fetch(`${server.url}/v1/pets?limit=1`, { headers: auth })
    assert.equal(page.status, 200)
    assert.equal(await page.text(), `[{"id":${id},"name":"Rex","categoryId":9007199254740993,"status":"pending"}]`)
    const next = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1]
    assert.ok(next)
    const page2 = await fetch(`${server.url}${next}`, { headers: auth })
    assert.deepEqual(await page2.json(), [{ id: secondId, name: 'Tom', categoryId: 2, status: 'available' }])
    assert.equal(page2.headers.get('link'), null)

    const got = await fetch(`${server.url}/v1/pets/${id}`, { headers: auth })
    assert.equal(got.status, 200)
    assert.equal(await got.text(), createdText)
    assert.equal(got.headers.get('deprecation'), '@1767225600')
    assert.equal(got.headers.get('sunset'), 'Thu, 05 Dec 2030 00:00:00 GMT')
    assert.equal(got.headers.get('link'), '</v1/pets>; rel="successor-version"')

    const anonymous = await fetch(`${server.url}/v1/pets`)
    assert.equal(anonymous.status, 401)
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="petstore"')
    assert.deepEqual(await anonymous.json(), { code: 'unauthorized', message: 'missing bearer API key: send Authorization: Bearer <API_KEY>', status: 401 })

    for (const path of ['/healthz', '/readyz']) assert.equal((await fetch(`${server.url}${path}`)).status, 200)

    // SIGTERM: a graceful stop, exit 0.
    server.child.kill('SIGTERM')
    assert.deepEqual(await server.exited, { code: 0, signal: null })

    // No secret ever reaches the logs (read after the exit: every buffered line is out by then).
    assert.equal(server.stdout().includes(firstKey), false)
    assert.equal(server.stdout().includes(key), false)
    assert.equal(server.stderr().includes(key), false)

    // A restart on the same store makes no key and still has the pets.
    rmSync(keyFile)
    const again = await startServer(t, env)
    assert.doesNotMatch(again.stdout(), /psk_/)
    assert.equal(existsSync(keyFile), false)
    const after = await fetch(`${again.url}/v1/pets`, { headers: auth })
    assert.deepEqual((await after.json() as Array<{ id: number }>).map(p => p.id), [Number(id), secondId])
  })

  it('starts the same way through `petstore serve`', async (t) => {
    const dir = tempDir(t)
    const server = await startServer(t, { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` }, [CLI_PATH, 'serve'])
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
    assert.equal((await fetch(`${server.url}/v1/pets`)).status, 401)
  })

  it('exits 1 at start naming the variable when a setting is bad', async (t) => {
    const dir = tempDir(t)
    const cases: Array<[string, string]> = [['PORT', 'abc'], ['PORT', '70000'], ['LOG_LEVEL', 'loud'], ['DATABASE_URL', 'mysql://localhost/db'], ['BODY_LIMIT', 'big']]
    for (const [name, value] of cases) {
      const res = await runServerToExit({ DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, [name]: value })
      assert.equal(res.code, 1, `${name}=${value}: ${res.stderr}`)
      assert.match(res.stderr, new RegExp(`invalid configuration: ${name}: `))
    }
  })
})
