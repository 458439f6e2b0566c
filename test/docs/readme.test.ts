import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { tempDir } from '../helpers/app.js'
import { type CodeBlock, codeBlocks as markdownBlocks } from '../helpers/markdown.js'
import { childEnv, ROOT, runCli, startServer } from '../helpers/process.js'

/*
 * The code blocks of README.md, and the TypeScript ones of docs/tutorial.md (its shell blocks are
 * run by shell-blocks.test.ts), run as a reader would against the built server: README's `sh run`
 * blocks in one bash session from the project folder, then every `ts` block compiled strictly (tsc)
 * against the built @petstore/client, as a project that installed it would, and run. What each
 * prints is checked. The docs' address 127.0.0.1:8080 becomes the test server's.
 */

const run = promisify(execFile)
const README = join(ROOT, 'README.md')
const TUTORIAL = join(ROOT, 'docs', 'tutorial.md')
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')

type Block = CodeBlock

/** The file named relative to the project, as the expectations below name it. */
const codeBlocks = (file: string): Block[] => markdownBlocks(file).map(b => ({ ...b, file: relative(ROOT, b.file) }))

const where = (b: Block) => `${b.file}:${b.line}`

/**
 * What each TypeScript block must print, in the order they run (README first, then the tutorial),
 * on a store where README's shell block made pet 1. `created` are the pets the test finds over HTTP
 * afterwards, by id.
 */
const EXPECTED: Array<{ file: string, check: (stdout: string) => void }> = [
  {
    file: 'README.md',
    check: (stdout) => {
      // The pending pets, page after page: README's shell block made 1, the example 2, and prints it;
      // then a create the service refuses (an empty name), as a typed error.
      const lines = stdout.trimEnd().split('\n')
      assert.deepEqual(lines.slice(0, 2), ['1n Rex', '2n Rex'], stdout)
      assert.match(lines[2]!, /^validation_failed 400 \S+$/, stdout)
      assert.equal(lines.length, 3, stdout)
    }
  },
  { file: 'docs/tutorial.md', check: (stdout) => assert.equal(stdout, '3n\n') }
]

describe('the code blocks of README.md and the TypeScript of the tutorial', () => {
  it('are each a shell block marked run or example, or TypeScript', () => {
    for (const b of [...codeBlocks(README), ...codeBlocks(TUTORIAL)]) {
      const ok = (b.lang === 'sh' && ['run', 'run-background', 'example'].includes(b.kind)) || (b.lang === 'ts' && b.kind === '')
      assert.ok(ok, `${where(b)}: a \`${b.lang} ${b.kind}\` block; this test runs \`sh run\` and \`ts\` blocks (\`sh example\` is shown only)`)
    }
  })

  it('run against the server and print what they promise: README\'s first calls, then its client example and the tutorial\'s', { timeout: 240_000 }, async (t) => {
    const dir = tempDir(t, 'petstore-readme-')
    const env = { DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, FIRST_KEY_FILE: join(dir, 'first-api-key.txt') }
    const server = await startServer(t, env)
    const host = new URL(server.url).host
    const local = (text: string) => text.replaceAll('127.0.0.1:8080', host)

    // README's shell blocks, in one bash session from the project folder.
    const shell = codeBlocks(README).filter(b => b.lang === 'sh' && b.kind === 'run')
    assert.equal(shell.length, 1, 'README has one runnable shell block (the first calls)')
    const script = join(dir, 'readme.sh')
    writeFileSync(script, ['set -euo pipefail', ...shell.map(b => local(b.text))].join('\n') + '\n')
    const sh = await run('bash', [script], { cwd: ROOT, env: childEnv(env), timeout: 60_000 })
    const rex = '{"id":1,"name":"Rex","categoryId":3,"status":"pending"}'
    assert.equal(sh.stdout, `${rex}[${rex}]`, 'the create answers Rex, the list of pending pets shows it')

    // The TypeScript blocks, in a project that installed the client (the built package folder).
    const ts = [...codeBlocks(README), ...codeBlocks(TUTORIAL)].filter(b => b.lang === 'ts')
    assert.deepEqual(ts.map(b => b.file), EXPECTED.map(e => e.file), 'every TypeScript block has its expected output here')
    const project = join(dir, 'app')
    mkdirSync(join(project, 'node_modules', '@petstore'), { recursive: true })
    symlinkSync(join(ROOT, 'packages', 'client'), join(project, 'node_modules', '@petstore', 'client'), 'dir')
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'reader', version: '1.0.0', private: true, type: 'module' }))
    const files = ts.map((b, i) => { const f = `block-${i + 1}.mts`; writeFileSync(join(project, f), local(b.text) + '\n'); return f })
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2022'],
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules', '@types')],
        outDir: 'out'
      },
      files
    }))
    await run(process.execPath, [TSC, '-p', project], { cwd: project }).catch((e: { stdout?: string }) => assert.fail(`tsc refused a block:\n${e.stdout ?? String(e)}`))

    const made = await runCli(['keys', 'create', '--name', 'reader'], env)
    assert.equal(made.code, 0, made.stderr)
    for (const [i, b] of ts.entries()) {
      const out = await run(process.execPath, [join(project, 'out', files[i]!.replace(/\.mts$/, '.mjs'))], {
        cwd: project, env: childEnv({ PETSTORE_KEY: made.stdout.trim() }), timeout: 60_000
      }).catch((e: { stdout?: string, stderr?: string }) => assert.fail(`${where(b)} failed:\n${e.stderr ?? String(e)}`))
      EXPECTED[i]!.check(out.stdout)
    }

    // The pets the examples say they made are in the store.
    const listed = await fetch(`${server.url}/v1/pets`, { headers: { authorization: `Bearer ${made.stdout.trim()}` } })
    assert.equal(listed.status, 200)
    assert.deepEqual(await listed.json(), [
      { id: 1, name: 'Rex', categoryId: 3, status: 'pending' },
      { id: 2, name: 'Rex', categoryId: 3, status: 'pending' },
      { id: 3, name: 'Rex', categoryId: 3, status: 'available' }
    ])
  })
})
