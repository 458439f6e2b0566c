import assert from 'node:assert/strict'
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'
import { runCli, startServer } from '../helpers/process.js'

/*
 * `petstore conformance` (the real binary) against a real server process, directly and behind small
 * proxies that break what proxies break: it must pass the first and name the check the second fails.
 */

interface Rewrite { status: number, headers: IncomingHttpHeaders, body: Buffer }

/** A reverse proxy to `upstream` that buffers each answer and passes it through `rewrite`. */
async function startProxy (t: TestContext, upstream: URL, rewrite: (answer: Rewrite, method: string) => Rewrite): Promise<string> {
  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      const chunks: Buffer[] = []
      up.on('data', (d: Buffer) => chunks.push(d))
      up.on('end', () => {
        const headers = { ...up.headers }
        delete headers['transfer-encoding']
        delete headers.connection
        delete headers['keep-alive']
        const answer = rewrite({ status: up.statusCode ?? 502, headers, body: Buffer.concat(chunks) }, req.method ?? 'GET')
        if (req.method !== 'HEAD' && answer.status !== 304) answer.headers['content-length'] = String(answer.body.length)
        res.writeHead(answer.status, answer.headers)
        res.end(req.method === 'HEAD' ? undefined : answer.body)
      })
    })
    out.on('error', () => { if (!res.headersSent) res.destroy() })
    // Expect: 100-continue is passed on: the body follows only when the upstream asks for it.
    if (req.headers.expect === undefined) {
      req.pipe(out)
    } else {
      out.flushHeaders()
      out.on('continue', () => { res.writeContinue(); req.pipe(out) })
    }
  }
  const proxy = createServer(forward)
  proxy.on('checkContinue', forward)
  await new Promise<void>(resolve => proxy.listen(0, '127.0.0.1', resolve))
  onCleanup(t, () => new Promise<void>(resolve => { proxy.closeAllConnections(); proxy.close(() => resolve()) }))
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
}

async function freshServer (t: TestContext): Promise<{ url: string, key: string }> {
  const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}` }
  const made = await runCli(['keys', 'create', '--name', 'conformance', '--create'], env)
  assert.equal(made.code, 0, made.stderr)
  const server = await startServer(t, env)
  return { url: server.url, key: made.stdout.trim() }
}

const failures = (stdout: string): string[] => stdout.split('\n').filter(l => l.startsWith('FAIL '))

describe('petstore conformance (black box)', () => {
  it('exits 0 against a fresh server, read-only and with --write, and never prints the key', async (t) => {
    const { url, key } = await freshServer(t)
    const readOnly = await runCli(['conformance', '--base-url', url, '--key', key], {})
    assert.equal(readOnly.code, 0, readOnly.stdout + readOnly.stderr)
    assert.equal(readOnly.stdout, '')
    // An empty store lists nothing to read: those checks say so rather than pass.
    assert.match(readOnly.stderr, /skipped getPet: the deployment lists no item to read \(--write creates one\)/)

    const write = await runCli(['conformance', '--base-url', url, '--json'], { PETSTORE_API_KEY: key })
    assert.equal(write.code, 0, write.stdout + write.stderr)
    const writeReport = JSON.parse(write.stdout) as { conforms: boolean, failed: number }
    assert.equal(writeReport.conforms, true)

    const created = await runCli(['conformance', '--base-url', url, '--key', key, '--write', '--json'], {})
    assert.equal(created.code, 0, created.stdout + created.stderr)
    const report = JSON.parse(created.stdout) as { conforms: boolean, skipped: number, checks: Array<{ id: string, outcome: string }> }
    assert.equal(report.conforms, true)
    assert.equal(report.skipped, 0)
    const ids = report.checks.map(c => c.id)
    for (const id of ['createPet 201', 'createPet Location readable', 'createPet Idempotency-Key replay', 'getPet', 'getPet missing id',
      'getPet If-None-Match → 304', 'listPets cursor walk', 'HTTP/1.1 framing and keep-alive', 'X-Request-Id echoed', 'createPet text/plain → 415']) {
      assert.ok(ids.includes(id), `check ${id} ran: ${ids.join(', ')}`)
    }
    // The created pet is named as the conformance check's.
    const list = await fetch(`${url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
    assert.ok(((await list.json()) as Array<{ name: string }>).some(p => p.name.startsWith('conformance-check-')))

    for (const r of [readOnly, write, created]) assert.equal((r.stdout + r.stderr).includes(key), false, 'the key was printed')
  })

  it('exits 1 naming the check behind a proxy that strips Sunset', async (t) => {
    const { url, key } = await freshServer(t)
    assert.equal((await runCli(['conformance', '--base-url', url, '--key', key, '--write'], {})).code, 0)
    const proxy = await startProxy(t, new URL(url), (a) => {
      delete a.headers.sunset
      return a
    })
    const r = await runCli(['conformance', '--base-url', proxy, '--key', key], {})
    assert.equal(r.code, 1, r.stdout + r.stderr)
    const lines = failures(r.stdout)
    assert.ok(lines.some(l => /^FAIL getPet deprecation headers: GET \/v1\/pets\/\d+ → 404: expected header Sunset .*; got no such header$/.test(l)), r.stdout)
    assert.ok(lines.some(l => /^FAIL getPet: .*required header Sunset is missing/.test(l)), r.stdout)
    // Only what the proxy broke fails: every failure is about Sunset.
    for (const l of lines) assert.match(l, /Sunset/)
    assert.equal((r.stdout + r.stderr).includes(key), false, 'the key was printed')
  })

  it('exits 1 naming the check behind a proxy that turns Error bodies into text', async (t) => {
    const { url, key } = await freshServer(t)
    const proxy = await startProxy(t, new URL(url), (a) => {
      if (a.status < 400 || a.body.length === 0) return a
      const error = JSON.parse(a.body.toString('utf8')) as { code: string, message: string }
      return { ...a, headers: { ...a.headers, 'content-type': 'text/plain; charset=utf-8' }, body: Buffer.from(`${error.code}: ${error.message}\n`) }
    })
    const r = await runCli(['conformance', '--base-url', proxy, '--key', key, '--json'], {})
    assert.equal(r.code, 1, r.stdout + r.stderr)
    const report = JSON.parse(r.stdout) as { conforms: boolean, checks: Array<{ id: string, outcome: string, where?: string, expected?: string, got?: string }> }
    assert.equal(report.conforms, false)
    const failed = report.checks.filter(c => c.outcome === 'failed')
    const missing = failed.find(c => c.id === 'getPet missing id')
    assert.ok(missing !== undefined, JSON.stringify(failed))
    assert.match(missing.got!, /content type text\/plain is not documented|an error must be application\/json, got text\/plain/)
    assert.ok(failed.some(c => c.id === 'listPets without a key → 401'), JSON.stringify(failed))
    // Successful answers pass through untouched: those checks still pass.
    assert.ok(report.checks.some(c => c.id === 'listPets cursor walk' && c.outcome === 'passed'))

    const text = await runCli(['conformance', '--base-url', proxy, '--key', key], {})
    assert.equal(text.code, 1)
    assert.ok(failures(text.stdout).some(l => l.startsWith('FAIL getPet missing id: GET /v1/pets/') && l.includes('text/plain')), text.stdout)
  })

  it('exits 2 for a usage error and tries nothing', async () => {
    const noKey = await runCli(['conformance', '--base-url', 'http://127.0.0.1:9'], {})
    assert.equal(noKey.code, 2)
    assert.match(noKey.stderr, /required option '--key <key>'/)
    const badUrl = await runCli(['conformance', '--base-url', 'ftp://example.com', '--key', 'k'], {})
    assert.equal(badUrl.code, 2)
    assert.match(badUrl.stderr, /URL must be http:\/\/ or https:\/\//)
  })

  it('refuses a base URL with a path prefix as a usage error (exit 2), never checking the root instead', async (t) => {
    const { url, key } = await freshServer(t)
    for (const base of [`${url}/some-prefix`, `${url}/v1`, `${url}/some-prefix/`]) {
      const r = await runCli(['conformance', '--base-url', base, '--key', key], {})
      assert.equal(r.code, 2, `${base}: ${r.stdout}${r.stderr}`)
      assert.equal(r.stdout, '')
      assert.match(r.stderr, /URL must be the deployment's origin, without a path \(not \/(some-prefix\/?|v1)\)/)
    }
    // The origin itself, with or without the slash, is checked.
    assert.equal((await runCli(['conformance', '--base-url', `${url}/`, '--key', key], {})).code, 0)
  })

  it('with a refused key: one line naming the refusal, at once, exit 1', async (t) => {
    const { url, key } = await freshServer(t)
    const wrong = `psk_${'A'.repeat(43)}`
    for (const args of [['--key', wrong], ['--key', wrong, '--json'], ['--key', wrong, '--write']]) {
      const r = await runCli(['conformance', '--base-url', url, ...args], {})
      assert.equal(r.code, 1, r.stdout + r.stderr)
      assert.equal(r.stdout, '')
      const lines = r.stderr.trimEnd().split('\n')
      assert.ok(lines.length <= 3, r.stderr)
      assert.match(r.stderr, /^petstore: the deployment refused the key: (GET \/v1\/pets|POST \/v1\/pets) → 401 \(unauthorized\); check --key \(or PETSTORE_API_KEY\)/m)
      assert.ok(!r.stderr.includes(wrong), 'the key was printed')
    }
    assert.equal((await runCli(['conformance', '--base-url', url, '--key', key], {})).code, 0)
  })
})
