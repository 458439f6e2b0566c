// Builds dist/esm (import) and dist/cjs (require) from src with the TypeScript of this package's
// devDependencies (or of an enclosing checkout). It is the `prepare` script, so `npm pack`, a git
// install and a folder install build it; a tarball ships dist and installs without building.
import { spawnSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const require = createRequire(import.meta.url)

function resolvable (id) {
  try {
    require.resolve(id)
    return true
  } catch {
    return false
  }
}

// What the build prints goes to stderr: under `npm pack --json` stdout is the tarball's description,
// and the nested install would inherit npm_config_json and print its own JSON there.
function run (command, args) {
  const r = spawnSync(command, args, { cwd: root, stdio: ['inherit', 2, 2] })
  if (r.status !== 0) process.exit(r.status ?? 1)
}

// `npm install <folder>` links a folder outside the project and runs its prepare without installing
// the folder's own dependencies (npm-install docs): install them here first, scripts off (no loop).
if (!resolvable('typescript/bin/tsc') || !resolvable('lossless-json')) {
  const npm = process.env.npm_execpath
  const args = ['install', '--no-audit', '--no-fund', '--no-package-lock', '--ignore-scripts', '--include=dev']
  if (npm !== undefined && npm.endsWith('.js')) run(process.execPath, [npm, ...args])
  else run(process.platform === 'win32' ? 'npm.cmd' : 'npm', args)
}

const tsc = require.resolve('typescript/bin/tsc')
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })
for (const project of ['tsconfig.json', 'tsconfig.cjs.json']) run(process.execPath, [tsc, '-p', project])
// Files under dist/cjs are CommonJS although this package is "type": "module".
writeFileSync(new URL('../dist/cjs/package.json', import.meta.url), '{ "type": "commonjs" }\n')
