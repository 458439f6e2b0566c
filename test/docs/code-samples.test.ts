import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { tempDir } from '../helpers/app.js'
import { childEnv, ROOT, runCli, startServer } from '../helpers/process.js'

/*
 * The code samples of the committed document (x-codeSamples: curl, the TypeScript client, fetch),
 * run as a reader would copy them, against the built server: curl in bash, the fetch samples as
 * JavaScript modules, the client samples compiled strictly (tsc) against the built @petstore/client
 * and run. Their address 127.0.0.1:8080 becomes the test server's. What each prints is checked.
 */

const run = promisify(execFile)
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')

interface Sample { lang: string, label: string, source: string }
type Json = Record<string, any>

const document = JSON.parse(readFileSync(join(ROOT, 'openapi', 'openapi.json'), 'utf8')) as Json
const samplesOf = (operationId: string): Sample[] => {
  for (const item of Object.values(document.paths as Record<string, Json>)) {
    for (const op of Object.values(item)) if (op.operationId === operationId) return op['x-codeSamples'] as Sample[]
  }
  throw new Error(`no operation ${operationId}`)
}

/** What each operation's samples print (curl, then the client, then fetch), in the order they run. */
const EXPECTED: Array<{ op: string, curl: RegExp, client?: RegExp, fetch: RegExp }> = [
  { op: 'createPet', curl: /^\{"id":1,"name":"Rex","categoryId":3,"status":"available"\}$/, client: /^2n 3n\n$/, fetch: /^\{ id: 3n, name: 'Rex', categoryId: 3n, status: 'available' \}\n$/ },
  { op: 'getPet', curl: /^\{"id":1,"name":"Rex","categoryId":3,"status":"available"\}$/, client: /^Rex available\n$/, fetch: /^\{ id: 1n, name: 'Rex', categoryId: 3n, status: 'available' \}\n$/ },
  {
    op: 'listPets',
    curl: /^\[\{"id":1,"name":"Rex",.*\{"id":3,"name":"Rex","categoryId":3,"status":"available"\}\]$/,
    client: /^\[\n.*id: 1n[\s\S]*\] undefined\n1n Rex\n2n Rex\n3n Rex\n$/,
    fetch: /^\[\n[\s\S]*id: 3n[\s\S]*\]\nnull\n$/
  },
  { op: 'listOrders', curl: /^\{"code":"not_implemented",/, fetch: /^501 \{\n {2}code: 'not_implemented',/ },
  { op: 'index', curl: /^\{.*"\/docs"/, fetch: /^200 \{/ },
  { op: 'liveness', curl: /^\{"status":"ok"/, fetch: /^200 \{ status: 'ok'/ },
  { op: 'readiness', curl: /^\{"status":"ok"/, fetch: /^200 \{ status: 'ok'/ }
]

describe('the code samples of the OpenAPI document', () => {
  it('cover every operation: curl, fetch, and the TypeScript client for the pets', () => {
    const ids = Object.values(document.paths as Record<string, Json>).flatMap(item => Object.values(item).map(op => String(op.operationId)))
    assert.deepEqual([...ids].sort(), EXPECTED.map(e => e.op).sort())
    for (const e of EXPECTED) assert.deepEqual(samplesOf(e.op).map(s => s.label), e.client === undefined ? ['curl', 'fetch'] : ['curl', 'TypeScript client', 'fetch'], e.op)
  })

  it('run against the server and print what they say', { timeout: 240_000 }, async (t) => {
    const dir = tempDir(t, 'petstore-samples-')
    const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, FIRST_KEY_FILE: join(dir, 'first-api-key.txt') }
    const server = await startServer(t, env)
    const local = (text: string) => text.replaceAll('127.0.0.1:8080', new URL(server.url).host)
    const made = await runCli(['keys', 'create', '--name', 'samples'], env)
    assert.equal(made.code, 0, made.stderr)
    const readerEnv = childEnv({ PETSTORE_KEY: made.stdout.trim() })

    // A project that installed the client and lossless-json.
    const project = join(dir, 'app')
    mkdirSync(join(project, 'node_modules', '@petstore'), { recursive: true })
    symlinkSync(join(ROOT, 'packages', 'client'), join(project, 'node_modules', '@petstore', 'client'), 'dir')
    symlinkSync(join(ROOT, 'node_modules', 'lossless-json'), join(project, 'node_modules', 'lossless-json'), 'dir')
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'reader', version: '1.0.0', private: true, type: 'module' }))
    const clients = EXPECTED.filter(e => e.client !== undefined).map(e => {
      const file = `${e.op}.mts`
      writeFileSync(join(project, file), local(samplesOf(e.op).find(s => s.label === 'TypeScript client')!.source) + '\n')
      return file
    })
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022'], types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')], outDir: 'out' },
      files: clients
    }))
    await run(process.execPath, [TSC, '-p', project], { cwd: project }).catch((e: { stdout?: string }) => assert.fail(`tsc refused a sample:\n${e.stdout ?? String(e)}`))

    for (const e of EXPECTED) {
      const samples = samplesOf(e.op)
      const curl = await run('bash', ['-c', `set -euo pipefail\n${local(samples.find(s => s.label === 'curl')!.source)}`], { env: readerEnv, timeout: 30_000 })
      assert.match(curl.stdout, e.curl, `${e.op} curl`)
      if (e.client !== undefined) {
        const out = await run(process.execPath, [join(project, 'out', `${e.op}.mjs`)], { cwd: project, env: readerEnv, timeout: 30_000 })
        assert.match(out.stdout, e.client, `${e.op} TypeScript client`)
      }
      const file = join(project, `${e.op}-fetch.mjs`)
      writeFileSync(file, local(samples.find(s => s.label === 'fetch')!.source) + '\n')
      const out = await run(process.execPath, [file], { cwd: project, env: readerEnv, timeout: 30_000 })
      assert.match(out.stdout, e.fetch, `${e.op} fetch`)
    }
  })
})
