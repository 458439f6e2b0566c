// The rooms of src/ and the one way their imports run (docs/explanation/architecture.md):
// entry (server.ts, start-server.ts, app.ts) and cli → routes → plugins → http → services → store,
// with config, errors.ts, logging, observability and runtime beside them. `npm run lint` runs this.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'An import circle: two files that need each other belong in one, or share a third.', from: {}, to: { circular: true } },
    { name: 'store-below-services', severity: 'error', comment: 'The store is the bottom room: it imports no room above it.', from: { path: '^src/store/' }, to: { path: '^src/(services|plugins|routes|http|cli|contract|docs)/|^src/(app|start-server|server)\\.ts$' } },
    { name: 'services-below-http', severity: 'error', comment: 'Services know nothing of HTTP: they import no route, plugin, http module or the CLI.', from: { path: '^src/services/' }, to: { path: '^src/(plugins|routes|http|cli|contract|docs)/|^src/(app|start-server|server)\\.ts$' } },
    { name: 'http-below-plugins', severity: 'error', comment: 'src/http holds what plugins and routes use; it imports neither.', from: { path: '^src/http/' }, to: { path: '^src/(plugins|routes|cli)/|^src/(app|start-server|server)\\.ts$' } },
    { name: 'plugins-below-routes', severity: 'error', from: { path: '^src/plugins/' }, to: { path: '^src/(routes|cli)/|^src/(start-server|server)\\.ts$' } },
    { name: 'routes-below-app', severity: 'error', from: { path: '^src/routes/' }, to: { path: '^src/cli/|^src/(app|start-server|server)\\.ts$' } },
    { name: 'foundations', severity: 'error', comment: 'config, errors.ts, schemas and runtime sit under everything: they import no room that serves requests.', from: { path: '^src/(config|schemas|runtime)/|^src/errors\\.ts$' }, to: { path: '^src/(services|plugins|routes|http|cli|logging|observability|contract|docs)/|^src/(app|start-server|server)\\.ts$' } },
    { name: 'nothing-imports-the-cli', severity: 'error', from: { path: '^src/', pathNot: '^src/cli/' }, to: { path: '^src/cli/' } }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' }
  }
}
