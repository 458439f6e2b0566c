/*
 * Imported first by every entry point (server, CLI), before any module that loads better-sqlite3:
 * better-sqlite3 13 needs Node-API 10 (Node >= 22.14) and crashes the process on older Node instead
 * of throwing. Say so in one line instead.
 */
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 14)) {
  process.stderr.write(
    `petstore: Node ${process.versions.node} is not supported; use Node 22 (>= 22.14) or 24. ` +
    'Run it through npm (`npm start`, `npx petstore`), which uses the Node that `npm install` put in node_modules/.bin ' +
    'when the system Node is older, or install Node 22/24.\n')
  process.exit(1)
}
