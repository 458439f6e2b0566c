// Chooses the Node that runs this project's npm scripts (`npm start`, `npm test`, `npm run build`,
// `npx petstore`). npm puts node_modules/.bin first on PATH for every script; node_modules/.bin/node
// is the bin of the local package scripts/node-shim (a declared dependency, so npm keeps it across
// `npm install <package>`), which runs node_modules/.petstore-node's Node when there is one, else the
// next `node` on PATH. Runs as `postinstall`, under the Node that runs npm itself.
//
// - The running Node is supported (>= 22.14, the first 22.x with Node-API 10, which better-sqlite3 13
//   needs): nothing is installed and the scripts use it.
// - It is older (e.g. a system Node 20): the official build named in package.json
//   ("petstore": { "node": "24.21.0" }) is installed from the npm registry's `node` package into
//   node_modules/.petstore-node, where the shim finds it.
// - PETSTORE_NODE_VERSION=X.Y.Z installs and links that version whatever the running Node is (CI uses
//   it to test a given line). PETSTORE_NODE_VERSION=system removes it.
//
// Plain JavaScript, no dependencies: it must run on any Node that npm runs on, Node 20 included.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const SHIM = join(ROOT, 'node_modules', '.bin', 'node')
const PREFIX = join(ROOT, 'node_modules', '.petstore-node')
const MIN = [22, 14]

function supported (version) {
  const [major, minor] = version.split('.').map(Number)
  return major > MIN[0] || (major === MIN[0] && minor >= MIN[1])
}

function say (line) {
  process.stderr.write(`petstore runtime: ${line}\n`)
}

function installed (version) {
  try {
    return JSON.parse(readFileSync(join(PREFIX, 'node_modules', 'node', 'package.json'), 'utf8')).version === version
  } catch {
    return false
  }
}

// `npx petstore` run from this folder installs the folder into npx's cache, and that install runs
// this script again (npm's command `exec`), under whatever Node runs npx: it must leave the
// project's runtime as the project's own install chose it.
if (process.env.npm_command === 'exec') process.exit(0)

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const requested = process.env.PETSTORE_NODE_VERSION
// The Node that runs npm (npm_node_execpath), not this script's: inside npm scripts, `node` may
// already be the shim running a Node installed here by an earlier install.
const npmNode = process.env.npm_node_execpath
const running = npmNode === undefined || npmNode === process.execPath
  ? process.versions.node
  : spawnSync(npmNode, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim()

if (requested === 'system' || (requested === undefined && supported(running))) {
  rmSync(PREFIX, { recursive: true, force: true })
  say(`npm scripts use this machine's Node ${running}`)
  process.exit(0)
}

const version = requested ?? pkg.petstore.node
if (!/^\d+\.\d+\.\d+$/.test(version)) {
  say(`PETSTORE_NODE_VERSION must be X.Y.Z or "system", not ${JSON.stringify(version)}`)
  process.exit(1)
}
if (!supported(version)) {
  say(`Node ${version} is not supported: this project needs Node >= ${MIN.join('.')} (22 or 24)`)
  process.exit(1)
}

if (!installed(version)) {
  say(`Node ${running} is older than ${MIN.join('.')}: installing Node ${version} from the npm registry (package "node") for npm scripts`)
  rmSync(PREFIX, { recursive: true, force: true })
  mkdirSync(PREFIX, { recursive: true })
  const npm = process.env.npm_execpath
  const [cmd, args] = npm !== undefined && npm.endsWith('.js') ? [process.execPath, [npm]] : [npm ?? 'npm', []]
  const r = spawnSync(cmd, [...args, 'install', '--prefix', PREFIX, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error', `node@${version}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    // The nested install must not inherit this project's lifecycle context.
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_package_') && k !== 'npm_lifecycle_event'))
  })
  if (r.status !== 0 || !installed(version)) {
    say(`could not install Node ${version}:\n${r.stderr || r.stdout}`)
    process.exit(1)
  }
}

const target = join(PREFIX, 'node_modules', 'node', 'bin', 'node')
if (!existsSync(target)) {
  say(`${target} is missing after installing Node ${version}`)
  process.exit(1)
}
const check = spawnSync(SHIM, ['--version'], { encoding: 'utf8' })
if (check.status !== 0 || check.stdout.trim() !== `v${version}`) {
  say(`node_modules/.bin/node does not run Node ${version}: ${check.error?.message ?? (check.stderr || check.stdout)}`)
  process.exit(1)
}
say(`npm scripts use Node ${version} (node_modules/.bin/node); this machine's Node is ${running}`)
