// Part of `npm run build`, after tsc: replaces dist/server.js (what `npm start`, `petstore serve`,
// the tests and the bench run) by one ES module holding our code and TypeBox. Loading TypeBox's 709
// modules and ours one by one was the largest single cost of a start (docs/performance.md,
// "Start-up"). Every other package stays external, loaded from node_modules exactly as before:
// native code (better-sqlite3), packages that read their own files (@fastify/swagger-ui, pino's
// transports) and packages loaded only on use (pg, ioredis) keep working unchanged.
// Not minified, names kept, with a source map (dist/server.js.map): a stack trace reads as it is,
// and `NODE_OPTIONS=--enable-source-maps` maps it to src/*.ts.
import { spawnSync } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { build } from 'esbuild'

const root = new URL('..', import.meta.url)
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))
const bundled = new Set(['typebox'])

// Modules loaded on demand (each store, with its driver) go to chunks of their own, loaded when used.
rmSync(new URL('dist/chunks', root), { recursive: true, force: true })
await build({
  absWorkingDir: root.pathname,
  entryPoints: ['src/server.ts'],
  outdir: 'dist',
  outbase: 'src',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: `node${pkg.engines.node.replace(/^>=\s*/, '').split('.')[0]}`,
  external: [
    ...Object.keys(pkg.dependencies).filter(name => !bundled.has(name)),
    // Stays the compiled file next to the bundle and, as the bundle's first import, still runs before
    // any package is loaded (it refuses an unsupported Node before better-sqlite3 can abort it).
    './node-version.js',
    // Likewise a file of its own, evaluated second, so it is on before any package is compiled.
    './compile-cache.js'
  ],
  // Where the SQLite store, bundled into a chunk, finds its writer thread's entry: the compiled file.
  define: { PETSTORE_WRITER_ENTRY: JSON.stringify('../store/sqlite/writer-worker.js') },
  sourcemap: 'linked',
  keepNames: true,
  logLevel: 'warning'
})

// Fills the compile cache (src/compile-cache.ts) by loading the bundle and everything it imports
// once, without starting: the first start after a build then compiles no more than later ones.
rmSync(new URL('node_modules/.cache/petstore-compile', root), { recursive: true, force: true })
const warm = spawnSync(process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(new URL('dist/server.js', root).href)})`], { stdio: 'inherit', timeout: 120_000 })
if (warm.status !== 0) throw new Error(`loading dist/server.js to fill the compile cache failed (exit ${warm.status})`)
