// `node scripts/serve-with-store-options.mjs '{"sqliteSynchronous":"NORMAL"}'`: the built server
// (dist/server.js, configured by the environment as `npm start`), with store options users cannot
// set (src/store/index.ts, StoreOptions). For the durability test and the bench, which compare the
// promised SQLite level with a weaker one.
// The build is loaded by URL, so the scripts' typecheck does not follow it into dist/.
const { startServer } = await import(new URL('../dist/server.js', import.meta.url).href)
await startServer(process.env, JSON.parse(process.argv[2] ?? '{}'))
