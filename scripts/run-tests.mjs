// Runs every test file under test/ with node's test runner (Node 20's `node --test` takes no globs).
// `npm test -- test/pets` narrows to files whose path contains one of the arguments.
// One throwaway PostgreSQL cluster serves the whole run (each test makes its own database in it);
// its admin URL reaches the tests as PETSTORE_TEST_PG_URL. Set that variable yourself to use a
// server of your own instead (the user needs CREATEDB).
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startCluster } from './pg-cluster.mjs'

function walk (dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [])
}

const filters = process.argv.slice(2)
const files = walk('test').sort().filter(f => filters.length === 0 || filters.some(x => f.includes(x)))
if (files.length === 0) {
  console.error('no test files matched')
  process.exit(1)
}

let cluster
const env = { ...process.env }
if (env.PETSTORE_TEST_PG_URL === undefined) {
  cluster = await startCluster()
  env.PETSTORE_TEST_PG_URL = cluster.url
}

const concurrency = process.env.TEST_CONCURRENCY ?? '2'
const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit', env })
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig))
const code = await new Promise(resolve => child.once('exit', (c, s) => resolve(c ?? (s === null ? 1 : 128))))
if (cluster !== undefined) await cluster.destroy()
process.exit(code)
