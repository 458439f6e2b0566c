// Runs every test file under test/ with node's test runner (Node 20's `node --test` takes no globs).
// `npm test -- test/pets` narrows to files whose path contains one of the arguments; `npm test -- --help`
// says how, and which files need which component.
//
// What the suite starts itself (docs/how-to/run-tests.md): a PostgreSQL cluster (one throwaway cluster serves
// the whole run; each test makes its own database in it; its admin URL reaches the tests as
// PETSTORE_TEST_PG_URL; set that variable yourself to use a server of your own, whose user needs
// CREATEDB), a PgBouncer in transaction mode in front of it (PETSTORE_TEST_PGBOUNCER_URL, or set
// it to a pooler of your own), redis-server, Chromium, strace, promtool. A test file names what it needs in a line comment
// `// requires: redis-server, chromium` among its first lines. When a component the chosen files need is
// missing (only those are looked for and reported):
// under CI=true the run fails at once, naming it; elsewhere the files that need it do not run (and
// the store-looped suites run on SQLite only without PostgreSQL), and the end of the output says
// so, loudly, with how to install it.
//
// Only what the chosen files need is prepared: the build (scripts/build-if-stale.mjs) when one of
// them, or a test helper it imports, runs something of dist/ (the compiled server, the CLI, the packed
// client); the PostgreSQL cluster and PgBouncer when one of them reaches a PostgreSQL store (below,
// NEEDS_POSTGRES). So `npm test -- test/routes/health` after a change under src/ runs at once,
// against src/ through tsx. A file whose need is not seen here fails loudly (dist/ is missing or
// stale, PETSTORE_TEST_PG_URL is not set), never passes without it. The whole suite needs both.
//
// A server or CLI process of ours that ends by a signal the test did not send (a crash) fails the
// run, even if the test's own assertions passed (test/helpers/exit-watch.ts).
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import { findPgBin, startCluster } from './pg-cluster.mjs'
import { findPgBouncer, startPgBouncer } from './pgbouncer.mjs'

function walk (dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [])
}

const LOCAL_IMPORT = /(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g
/** Names a test or helper uses only when it reaches a PostgreSQL store. */
const NEEDS_POSTGRES = /\b(STORES|PG_ROUTES|testClusterUrl|testPoolerUrl|createTestDatabase|testDatabaseUrl|createDatabaseOn|PETSTORE_TEST_PG(BOUNCER)?_URL)\b|store: '(postgres|pgbouncer)'/
/** A path into the build's output: dist/ of the service or of the client package. */
const NEEDS_BUILD = /\bdist\/|'dist'/

/** The texts of a test file and of every test/ file it imports, transitively (test/helpers/app.ts's own text left out: its PostgreSQL use depends on what its caller passes). */
function textsOf (file, seen = new Set()) {
  if (seen.has(file) || !file.startsWith('test') || !existsSync(file)) return []
  seen.add(file)
  const text = readFileSync(file, 'utf8')
  const imported = [...text.matchAll(LOCAL_IMPORT)].map(m => join(dirname(file), m[1].replace(/\.js$/, '.ts')))
  const own = file.endsWith(join('helpers', 'app.ts')) ? [] : [text]
  return [...own, ...imported.flatMap(f => textsOf(f, seen))]
}

function onPath (cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0
}

/** Each component the suite starts: how to tell it is here, and how to get it. */
const COMPONENTS = {
  postgresql: {
    present: () => {
      if (process.env.PETSTORE_TEST_PG_URL) return true
      try { findPgBin(); return true } catch { return false }
    },
    get: 'apt-get install postgresql (server binaries; or set PG_BIN, or PETSTORE_TEST_PG_URL to a server of your own)'
  },
  pgbouncer: {
    present: () => {
      if (process.env.PETSTORE_TEST_PGBOUNCER_URL) return true
      try { findPgBouncer(); return true } catch { return false }
    },
    get: 'apt-get install pgbouncer (or set PGBOUNCER_BIN, or PETSTORE_TEST_PGBOUNCER_URL to a pooler of your own in front of PETSTORE_TEST_PG_URL)'
  },
  'redis-server': { present: () => onPath('redis-server'), get: 'apt-get install redis-server' },
  chromium: { present: () => onPath('chromium'), get: 'apt-get install chromium (Debian\'s; never `npx playwright install`)' },
  strace: { present: () => onPath('strace'), get: 'apt-get install strace' },
  script: { present: () => onPath('script'), get: 'apt-get install bsdutils (util-linux `script`: runs the CLI and server on a pseudo-terminal)' },
  chattr: { present: () => onPath('chattr'), get: 'apt-get install e2fsprogs (`chattr +i`: files even root cannot write)' },
  podman: { present: () => onPath('podman') && onPath('runc'), get: 'apt-get install podman runc uidmap slirp4netns golang-github-containernetworking-plugin-dnsname, and /etc/containers/containers.conf as .ci/run writes it (runc, cgroupfs)' },
  debootstrap: { present: () => onPath('debootstrap'), get: 'apt-get install debootstrap (builds the stand-in of the official node base image)' },
  'podman-compose': { present: () => onPath('podman-compose'), get: 'apt-get install podman-compose' },
  'systemd-analyze': { present: () => onPath('systemd-analyze'), get: 'apt-get install systemd (`systemd-analyze verify` checks the unit in deploy/systemd)' },
  'docker-compose': { present: () => onPath('docker-compose'), get: 'apt-get install docker-compose (`docker-compose config` checks the compose files; no engine needed)' },
  promtool: { present: () => onPath('promtool'), get: 'apt-get install prometheus (Debian\'s; its promtool checks and unit-tests deploy/prometheus)' },
  'old-node': {
    present: oldNodeWithRuntime,
    get: 'a Node older than 22.14 (PETSTORE_TEST_OLD_NODE=/path/to/node, else /usr/bin/node; e.g. `npm install --prefix DIR node@20`) and the runtime `npm ci` installs next to the project when its Node is that old (node_modules/.petstore-node; or `PETSTORE_NODE_VERSION=X.Y.Z npm ci`)'
  }
}

/** A Node older than 22.14 (test/blackbox/old-node.test.ts runs the entries on it), and a newer one installed next to the project. */
function oldNodeWithRuntime () {
  const r = spawnSync(process.env.PETSTORE_TEST_OLD_NODE ?? '/usr/bin/node', ['-p', 'process.versions.node'], { encoding: 'utf8' })
  const [major, minor] = (r.stdout ?? '').trim().split('.').map(Number)
  const old = r.status === 0 && (major < 22 || (major === 22 && minor < 14))
  return old && existsSync('node_modules/.petstore-node/node_modules/node/bin/node')
}

function requirements (file) {
  const head = readFileSync(file, 'utf8').slice(0, 4000)
  const m = /^\/\/ requires: (.+)$/m.exec(head)
  const names = m === null ? [] : m[1].split(',').map(s => s.trim()).filter(Boolean)
  for (const n of names) if (!(n in COMPONENTS)) throw new Error(`${file}: unknown requirement "${n}" (known: ${Object.keys(COMPONENTS).join(', ')})`)
  return names
}

/** What `file` needs of the components: its `// requires:` line, and PostgreSQL with PgBouncer when it reaches a PostgreSQL store. */
function needs (file) {
  const postgres = NEEDS_POSTGRES.test(textsOf(file).join('\n')) ? ['postgresql', 'pgbouncer'] : []
  return [...new Set([...requirements(file), ...postgres])]
}

const USAGE = `Usage: npm test [-- TEXT...]

  npm test                              every test file under test/
  npm test -- test/routes/root          one file: every file whose path contains the text
  npm test -- test/blackbox test/store  folders (or any mix of texts; a file matching one runs)
  npm test -- --help                    this text

Only what the chosen files need is prepared: the build when one runs something of dist/, a
throwaway PostgreSQL cluster and PgBouncer when one reaches a PostgreSQL store. TEST_CONCURRENCY
sets how many files run at once (2). Under CI=true a missing component a chosen file needs fails
the run; elsewhere the files that need it do not run, and the end of the output says so.
docs/how-to/run-tests.md has more.

Components the suite starts, whether this machine has each, and the files that need it:`

const filters = process.argv.slice(2)
const all = walk('test').sort()
if (filters.includes('--help') || filters.includes('-h') || filters.some(f => f.startsWith('-'))) {
  const bad = filters.find(f => f.startsWith('-') && f !== '--help' && f !== '-h')
  const out = bad === undefined ? console.log : console.error
  if (bad !== undefined) console.error(`npm test: unknown option ${bad}\n`)
  out(USAGE)
  const byComponent = new Map(Object.keys(COMPONENTS).map(name => [name, []]))
  for (const f of all) for (const n of needs(f)) byComponent.get(n).push(f)
  for (const [name, list] of byComponent) {
    out(`\n  ${name} (${COMPONENTS[name].present() ? 'present' : `missing — ${COMPONENTS[name].get}`}): ${list.length} file(s)`)
    for (const f of list) out(`      ${f}`)
  }
  process.exit(bad === undefined ? 0 : 2)
}
const selected = all.filter(f => filters.length === 0 || filters.some(x => f.includes(x)))
if (selected.length === 0) {
  console.error(`no test file's path contains ${filters.map(f => JSON.stringify(f)).join(' or ')} (npm test -- --help shows how to choose)`)
  process.exit(1)
}

// Only the components the chosen files need are looked for and reported.
const needed = new Map(selected.map(f => [f, needs(f)]))
const missing = Object.keys(COMPONENTS).filter(name => [...needed.values()].some(n => n.includes(name)) && !COMPONENTS[name].present())
const ci = process.env.CI === 'true' || process.env.CI === '1'
if (missing.length > 0 && ci) {
  console.error('CI=true and the test suite cannot start these components the chosen files need (a missing component is a failure, never a skip):')
  for (const name of missing) console.error(`  - ${name}: ${COMPONENTS[name].get}`)
  process.exit(1)
}
const notRun = new Map(missing.map(name => [name, []]))
const files = selected.filter(f => {
  const lacking = requirements(f).filter(n => missing.includes(n))
  for (const n of lacking) notRun.get(n).push(f)
  return lacking.length === 0
})

const texts = files.map(f => textsOf(f).join('\n'))
if (texts.some(t => NEEDS_BUILD.test(t))) {
  const build = spawnSync(process.execPath, [fileURLToPath(new URL('build-if-stale.mjs', import.meta.url))], { stdio: 'inherit' })
  if (build.status !== 0) process.exit(build.status ?? 1)
}
const postgres = files.some(f => needed.get(f).includes('postgresql'))

/** @type {NodeJS.ProcessEnv} */
const env = { ...process.env, PETSTORE_TEST_MISSING: missing.join(',') }
const scratch = mkdtempSync(join(tmpdir(), 'petstore-run-'))
env.PETSTORE_TEST_SIGNAL_LOG = join(scratch, 'signals.log')

let cluster
if (postgres && env.PETSTORE_TEST_PG_URL === undefined && !missing.includes('postgresql')) {
  cluster = await startCluster()
  env.PETSTORE_TEST_PG_URL = cluster.url
}
let pooler
if (postgres && env.PETSTORE_TEST_PGBOUNCER_URL === undefined && !missing.includes('pgbouncer') && env.PETSTORE_TEST_PG_URL !== undefined) {
  try {
    pooler = await startPgBouncer(env.PETSTORE_TEST_PG_URL)
  } catch (err) {
    await cluster?.destroy()
    throw err
  }
  env.PETSTORE_TEST_PGBOUNCER_URL = pooler.url
}

let code = 0
if (files.length > 0) {
  const concurrency = process.env.TEST_CONCURRENCY ?? '2'
  // A test still running after 10 minutes fails (the whole suite takes about 7 on this machine).
  // Not --test-force-exit: under this runner it ends files before all their results are reported,
  // and a run with results missing still passes.
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=600000', ...files], { stdio: 'inherit', env })
  for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.on(sig, () => child.kill(sig))
  code = await new Promise(resolve => child.once('exit', (c, s) => resolve(c ?? (s === null ? 1 : 128))))
}
await pooler?.destroy()
if (cluster !== undefined) await cluster.destroy()

let signals = ''
try { signals = readFileSync(env.PETSTORE_TEST_SIGNAL_LOG, 'utf8') } catch {}
rmSync(scratch, { recursive: true, force: true })
if (signals !== '') {
  console.error('\nFAILED: processes of ours ended by a signal no test sent (a crash):')
  for (const line of signals.trim().split('\n')) console.error(`  - ${line}`)
  code = code === 0 ? 1 : code
}

if (missing.length > 0) {
  const bar = '!'.repeat(78)
  console.error(`\n${bar}\nNOT EVERYTHING RAN: missing on this machine (CI=true would fail here):`)
  for (const name of missing) {
    console.error(`\n  ${name} — get it with: ${COMPONENTS[name].get}`)
    if (name === 'postgresql') console.error('    the store-looped suites ran on SQLite only (their PostgreSQL half did not run)')
    if (name === 'pgbouncer') console.error('    the store-looped suites did not run through the pooler')
    const list = notRun.get(name)
    if (list.length > 0) console.error(`    these files did not run:\n${list.map(f => `      ${f}`).join('\n')}`)
  }
  console.error(`${bar}\n`)
}
console.error(`test run on Node ${process.versions.node} (${process.execPath})`)
process.exit(code)
