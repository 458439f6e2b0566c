// `npm install`'s build (package.json `prepare`), and run by scripts/run-tests.mjs when a chosen test
// file uses dist/: runs `npm run build` unless the build is up to date, so the first test run after
// an install, or after a test-only change, starts at once. Up to date: dist/.build-stamp exists and nothing the
// build reads (below; directories count too, so a removed file counts) changed since the last build
// made here began.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const STAMP = join(ROOT, 'dist', '.build-stamp')
const INPUTS = [
  'src', 'packages/client/src', 'packages/client/scripts', 'packages/client/package.json',
  'packages/client/tsconfig.json', 'packages/client/tsconfig.cjs.json',
  'scripts/bundle.mjs', 'scripts/chmod-bin.mjs', 'package.json', 'package-lock.json',
  'tsconfig.json', 'tsconfig.build.json', 'node_modules/.package-lock.json'
]

/** The latest modification time (ms) of `path` and, for a directory, of everything under it. */
function newest (path) {
  if (!existsSync(path)) return 0
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  return readdirSync(path).reduce((m, name) => Math.max(m, newest(join(path, name))), st.mtimeMs)
}

const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : -1
const changed = Math.max(...INPUTS.map(p => newest(join(ROOT, p))))
if (built >= changed) {
  process.stderr.write('build up to date (nothing the build reads changed since dist/.build-stamp): not rebuilding\n')
  process.exit(0)
}
const started = new Date()
const npm = process.env.npm_execpath
const run = npm === undefined
  ? spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' })
  : spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: ROOT, stdio: 'inherit' })
if (run.status !== 0) process.exit(run.status ?? 1)
// Stamped with the build's start: a file saved during the build is newer, so the next run rebuilds.
writeFileSync(STAMP, '')
utimesSync(STAMP, started, started)
