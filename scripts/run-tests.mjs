// Runs every test file under test/ with node's test runner (Node 20's `node --test` takes no globs).
// `npm test -- test/pets` narrows to files whose path contains one of the arguments.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

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
const concurrency = process.env.TEST_CONCURRENCY ?? '2'
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit' })
process.exit(r.status ?? 1)
