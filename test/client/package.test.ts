import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { freePort } from '../helpers/server.js'
import { makeKey, startServerProcess } from '../helpers/server-process.js'
import { onCleanup } from '../helpers/cleanup.js'

const run = promisify(execFile)
const REPO = fileURLToPath(new URL('../../', import.meta.url))
const CLIENT_DIR = join(REPO, 'packages/client')
const TSC = join(REPO, 'node_modules/typescript/bin/tsc')
const NPM = process.env.npm_execpath !== undefined && process.env.npm_execpath.endsWith('.js') ? [process.execPath, process.env.npm_execpath] : ['npm']

/** npm as a user runs it: none of the npm_* settings of the `npm test` that started us. */
async function npm (cwd: string, args: string[]): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')))
  const { stdout } = await run(NPM[0]!, [...NPM.slice(1), ...args], { cwd, env, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

// What an integrator writes: strict TypeScript against the installed package, ESM and CommonJS.
const CHECK_MTS = `import { createClient, PetstoreConnectionError, PetstoreError, type Pet, type PetsPage } from '@petstore/client'

const [baseUrl, apiKey, deadUrl] = process.argv.slice(2) as [string, string, string]
const client = createClient({ baseUrl, apiKey, timeoutMs: 20_000, retry: { retries: 1 }, onDeprecation: () => {} })
const big: bigint = 2n ** 53n + 1n
const first: Pet = await client.createPet({ name: 'Packed', categoryId: big, status: 'pending' }, { idempotencyKey: 'packed-1' })
const replay: Pet = await client.createPet({ name: 'Packed', categoryId: big, status: 'pending' }, { idempotencyKey: 'packed-1' })
for (let i = 0; i < 4; i++) await client.createPet({ name: 'p' + i, categoryId: i })
const walked: string[] = []
for await (const p of client.pets({ pageSize: 2 })) walked.push(p.name)
const page: PetsPage = await client.listPets({ limit: 2 })
const second = await client.listPets({ limit: 2, cursor: page.nextCursor })
const got = await client.getPet(first.id)
let notFound = ''
try {
  await client.getPet(first.id + 1000n)
} catch (e) {
  if (e instanceof PetstoreError) notFound = e.code + ' ' + e.status
}
let connection = ''
try {
  await createClient({ baseUrl: deadUrl, apiKey }).listPets()
} catch (e) {
  if (e instanceof PetstoreConnectionError) connection = e.code
}
// @ts-expect-error categoryId is required: the types are real, not any
await client.createPet({ name: 'x' }).catch(() => {})
console.log(JSON.stringify({
  firstId: String(first.id), replayId: String(replay.id), categoryId: String(got.categoryId),
  walked, pages: [page.pets.map(p => p.name), second.pets.map(p => p.name)], notFound, connection
}))
`
const CHECK_CTS = `import { createClient, PetstoreError } from '@petstore/client'

const [baseUrl, apiKey] = process.argv.slice(2) as [string, string]
createClient({ baseUrl, apiKey, onDeprecation: () => {} }).getPet(1n).then(
  pet => console.log(JSON.stringify({ name: pet.name, categoryId: String(pet.categoryId) })),
  (e: unknown) => console.log(JSON.stringify({ error: e instanceof PetstoreError ? e.code : String(e) }))
)
`

describe('@petstore/client as a package', () => {
  it('packs from a clean checkout with dist, leaves nothing in its work tree, installs from the tarball outside the repo, type-checks strictly and works against dist/server.js', { timeout: 300_000 }, async (t) => {
    const scratch = mkdtempSync(join(tmpdir(), 'petstore-client-'))
    onCleanup(t, () => rmSync(scratch, { recursive: true, force: true }))

    // A clean checkout of the commit: no root node_modules, nothing built. npm pack runs `prepare`,
    // which installs the package's own build dependencies and builds dist; the tarball, written
    // outside the checkout, is what an integrator receives.
    const checkout = join(scratch, 'checkout')
    await run('git', ['clone', '--quiet', REPO, checkout])
    const packed = await npm(join(checkout, 'packages/client'), ['pack', '--json', '--pack-destination', scratch])
    const { stdout: status } = await run('git', ['-C', checkout, 'status', '--porcelain', '--untracked-files=all'])
    assert.equal(status, '', 'packing left no file in the work tree that git would see')
    const { stdout: tarballs } = await run('find', [checkout, '-name', '*.tgz', '-not', '-path', '*/node_modules/*'])
    assert.equal(tarballs, '', 'no tarball in the work tree')
    const [info] = JSON.parse(packed.slice(packed.indexOf('['))) as Array<{ filename: string, files: Array<{ path: string }> }>
    const files = info!.files.map(f => f.path)
    for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/cjs/package.json', 'src/index.ts']) {
      assert.ok(files.includes(f), `${f} is in the tarball: ${files.join(', ')}`)
    }

    const project = join(scratch, 'app')
    rmSync(project, { recursive: true, force: true })
    await run('mkdir', [project])
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'integrator', version: '1.0.0', private: true, type: 'module' }))
    await npm(project, ['install', '--prefer-offline', '--no-audit', '--no-fund', join(scratch, info!.filename)])
    const installed = join(project, 'node_modules/@petstore/client')
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'))
    assert.equal(manifest.private, undefined, 'the package is publishable')
    assert.ok(existsSync(join(project, 'node_modules/lossless-json/package.json')), 'its dependency was installed with it')
    assert.ok(!existsSync(join(project, 'node_modules/typescript')), 'nothing was built on install: no devDependencies')

    // Every source map points at a file the package ships.
    for (const format of ['esm', 'cjs']) {
      const dir = join(installed, 'dist', format)
      for (const map of readdirSync(dir).filter(f => f.endsWith('.map'))) {
        const { sources } = JSON.parse(readFileSync(join(dir, map), 'utf8')) as { sources: string[] }
        assert.ok(sources.length > 0)
        for (const s of sources) assert.ok(existsSync(resolve(dirname(join(dir, map)), s)), `${format}/${map} → ${s} resolves`)
      }
    }

    writeFileSync(join(project, 'check.mts'), CHECK_MTS)
    writeFileSync(join(project, 'check.cts'), CHECK_CTS)
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2022'],
        types: ['node'],
        typeRoots: [join(REPO, 'node_modules/@types')],
        outDir: 'out'
      },
      files: ['check.mts', 'check.cts']
    }))
    await run(process.execPath, [TSC, '-p', project], { cwd: project }).catch((e: { stdout?: string }) => assert.fail(`tsc refused the integrator's file:\n${e.stdout ?? String(e)}`))

    const db = join(scratch, 'petstore.db')
    const key = await makeKey(db)
    const server = await startServerProcess(db)
    onCleanup(t, () => server.proc.kill('SIGKILL'))
    const baseUrl = `http://127.0.0.1:${server.port}/v1`
    const deadUrl = `http://127.0.0.1:${await freePort()}/v1`

    const esm = JSON.parse((await run(process.execPath, [join(project, 'out/check.mjs'), baseUrl, key, deadUrl], { cwd: project })).stdout)
    assert.deepEqual(esm, {
      firstId: esm.firstId,
      replayId: esm.firstId,
      categoryId: '9007199254740993',
      walked: ['Packed', 'p0', 'p1', 'p2', 'p3'],
      pages: [['Packed', 'p0'], ['p1', 'p2']],
      notFound: 'not_found 404',
      connection: 'connection_failed'
    })
    const cjs = JSON.parse((await run(process.execPath, [join(project, 'out/check.cjs'), baseUrl, key], { cwd: project })).stdout)
    assert.deepEqual(cjs, { name: 'Packed', categoryId: '9007199254740993' })
  })

  it('installs from a folder of a fresh clone (no root node_modules): prepare installs its own dependencies and builds', { timeout: 300_000 }, async (t) => {
    const scratch = mkdtempSync(join(tmpdir(), 'petstore-client-folder-'))
    onCleanup(t, () => rmSync(scratch, { recursive: true, force: true }))
    // The package folder as a clone has it: sources only, nothing built or installed, no enclosing node_modules.
    const folder = join(scratch, 'clone/packages/client')
    cpSync(CLIENT_DIR, folder, { recursive: true, filter: src => !/[/\\](dist|node_modules)$/.test(src) && !src.endsWith('.tgz') })
    assert.ok(!existsSync(join(folder, 'dist')))

    const project = join(scratch, 'app')
    await run('mkdir', ['-p', project])
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'integrator', version: '1.0.0', private: true, type: 'module' }))
    await npm(project, ['install', '--prefer-offline', '--no-audit', '--no-fund', folder])
    assert.ok(existsSync(join(folder, 'dist/esm/index.js')) && existsSync(join(folder, 'dist/cjs/index.js')), 'prepare built dist in the folder')

    const esm = "import { createClient, PetstoreConnectionError } from '@petstore/client'\n" +
      "const e = await createClient({ baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'k' }).listPets().catch(x => x)\n" +
      'console.log(e instanceof PetstoreConnectionError ? e.code : String(e))\n'
    const cjs = "const { parseRetryAfter } = require('@petstore/client')\nconsole.log(parseRetryAfter('3'))\n"
    writeFileSync(join(project, 'esm.mjs'), esm)
    writeFileSync(join(project, 'cjs.cjs'), cjs)
    assert.equal((await run(process.execPath, ['esm.mjs'], { cwd: project })).stdout.trim(), 'connection_failed')
    assert.equal((await run(process.execPath, ['cjs.cjs'], { cwd: project })).stdout.trim(), '3000')
  })
})
