// Part of `npm run build`, after tsc: replaces dist/server.js (what `npm start`, `petstore serve`,
// the tests and the bench run) and dist/start-server.js, the service it loads, by bundles. Loading
// TypeBox's 709 modules, then Fastify, pino and their dependencies one by one is the largest single
// cost of an unbundled start (docs/explanation/performance.md). dist/server.js stays a small entry that turns the
// compile cache on and then imports dist/start-server.js, so the bundle's compiled code is cached too.
// Kept external, loaded from node_modules: native code (better-sqlite3), packages
// that read their own files at run time (the docs page's), and packages loaded only on use (pg,
// ioredis, Ajv…), which would otherwise weigh on every start's parse for nothing.
// Not minified, with source maps (dist/*.js.map): a stack trace reads as it is, and
// `NODE_OPTIONS=--enable-source-maps` maps it to src/*.ts (and node_modules/*/…). Without esbuild's
// keepNames: it wraps every function and class made at run time in a defineProperty call for its
// `name`, which on Fastify's per-request closures makes a create markedly dearer
// (docs/explanation/performance.md). Without it, only the few names esbuild must rename apart in one
// scope get a digit (our Metrics, Fastify's LogController, some TypeBox and pino helpers): nothing
// reads them, errors keep theirs (test/blackbox/source-maps.test.ts checks names in stack traces).
import { spawnSync } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { build } from 'esbuild'

const root = new URL('..', import.meta.url)
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))
// Every other dependency (and what they require) is bundled. A package added to package.json is
// bundled unless it is listed here: check it for reads of its own files (__dirname, require.resolve,
// worker files) first.
const external = [
  'better-sqlite3', // native code
  // The docs app, built on first use: @fastify/swagger-ui and @fastify/static serve their own files,
  // and the docs page reads lossless-json's browser build.
  '@fastify/swagger', '@fastify/swagger-ui', 'yaml', 'lossless-json',
  // Loaded on use only: a store's driver, Redis rate limits, the request validator, pretty logs.
  'pg', 'ioredis', '@fastify/rate-limit', 'ajv', 'pino-pretty',
  // OpenTelemetry, only while tracing is on (src/observability/tracing-sdk.ts): the SDK patches the drivers as
  // Node loads them from node_modules.
  '@opentelemetry/*',
  // Required only when used: Fastify's default compilers (schemas/index.ts gives it ours, and loads
  // its serializer on the first answer) and inject() (light-my-request).
  '@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler', 'light-my-request',
  // The CLI's own (the CLI is compiled by tsc, not bundled).
  'cli-progress', 'cli-table3', 'commander'
]

// Node's builtins, as the bundle's code imports them (`import { x } from 'node:fs'`, `require('node:http2')`),
// are taken with process.getBuiltinModule, the module CommonJS gets. An ES import of a builtin builds
// its ES facade, which reads every export and so runs Node's lazy getters at load: node:fs loads
// fs/promises and readline, node:crypto webcrypto (≈ 5 ms of CPU each, for nothing a start uses).
// node:http2 and node:https, which Fastify requires whatever its options but uses only for an HTTP/2
// or TLS server (neither is one of ours), are loaded at their first use instead of at start (≈ 10–20 ms).
const LAZY_BUILTINS = new Set(['node:http2', 'node:https'])
/** @type {import('esbuild').Plugin} */
const builtinsAsCommonJs = {
  name: 'builtins-as-commonjs',
  setup (b) {
    b.onResolve({ filter: /^node:/ }, (args) => ({ path: args.path, namespace: 'node-builtin' }))
    b.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (args) => {
      const get = `process.getBuiltinModule(${JSON.stringify(args.path)})`
      return {
        contents: LAZY_BUILTINS.has(args.path)
          ? `let loaded; module.exports = new Proxy({}, { get: (_, name) => (loaded ??= ${get})[name] })`
          : `module.exports = ${get}`,
        loader: 'js'
      }
    })
  }
}

// Modules loaded on demand (each store, with its driver) go to chunks of their own, loaded when used.
rmSync(new URL('dist/chunks', root), { recursive: true, force: true })
await build({
  absWorkingDir: root.pathname,
  entryPoints: ['src/server.ts', 'src/start-server.ts'],
  outdir: 'dist',
  outbase: 'src',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: `node${pkg.engines.node.replace(/^>=\s*/, '').split('.')[0]}`,
  external: [
    ...external,
    // Stays the compiled file next to the bundle and, as the bundle's first import, still runs before
    // any package is loaded (it refuses an unsupported Node before better-sqlite3 can abort it).
    './runtime/node-version.js',
    // Likewise a file of its own, evaluated second, so it is on before any package is compiled.
    './runtime/compile-cache.js'
  ],
  // Where the SQLite store, bundled into a chunk, finds its threads' entries: the compiled files.
  define: { PETSTORE_SQLITE_THREADS: JSON.stringify('../store/sqlite/') },
  // CommonJS packages inside an ES module: esbuild's __require, for Node's builtins and the external
  // packages above, calls this require (resolved from dist/, so from the project's node_modules).
  banner: { js: "import { createRequire as __petstoreCreateRequire } from 'node:module'; const require = __petstoreCreateRequire(import.meta.url);" },
  plugins: [builtinsAsCommonJs],
  sourcemap: 'linked',
  keepNames: false,
  logLevel: 'warning'
})

// Fills the compile cache (src/runtime/compile-cache.ts) by loading the entry and the service with
// everything they import once, without starting: the first start after a build then compiles no
// more than later ones.
rmSync(new URL('node_modules/.cache/petstore-compile', root), { recursive: true, force: true })
const warm = spawnSync(process.execPath, ['--input-type=module', '-e', `await (await import(${JSON.stringify(new URL('dist/server.js', root).href)})).loadService()`], { stdio: 'inherit', timeout: 120_000 })
if (warm.status !== 0) throw new Error(`loading dist/server.js to fill the compile cache failed (exit ${warm.status})`)
