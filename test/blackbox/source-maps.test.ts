import assert from 'node:assert/strict'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it, type TestContext } from 'node:test'
import Database from 'better-sqlite3'
import { tempDir } from '../helpers/app.js'
import { httpRequest, makeKey, startServerProcess, type ServerProcess } from '../helpers/server-process.js'
import { onCleanup } from '../helpers/cleanup.js'

/*
 * The production build is bundled (scripts/bundle.mjs: our code with Fastify, pino and the rest in
 * dist/start-server.js). A stack trace must still lead to the source: with
 * NODE_OPTIONS=--enable-source-maps, the frames of a logged error name src/*.ts and the bundled
 * packages' own files, not dist/. The error is real: the pets table is renamed away under the
 * running server, so its read fails with SQLITE_ERROR (a 500, logged with the stack).
 */
async function failedRead (t: TestContext, env: Record<string, string>): Promise<string[]> {
  const dbPath = join(tempDir(t), 'petstore.db')
  const key = await makeKey(dbPath)
  const server: ServerProcess = await startServerProcess(dbPath, { env })
  onCleanup(t, async () => { server.proc.kill('SIGKILL'); await server.exited })
  const db = new Database(dbPath)
  db.exec('ALTER TABLE pets RENAME TO pets_gone')
  db.close()
  const res = await httpRequest(server.port, 'GET', '/v1/pets/1', { authorization: `Bearer ${key}` })
  assert.equal(res.status, 500, res.body)
  // Log lines reach stdout a few ms after the response (the batched destination).
  let line: string | undefined
  for (let i = 0; i < 600 && line === undefined; i++) {
    line = server.output().split('\n').find(l => l.includes('"msg":"request failed"'))
    if (line === undefined) await sleep(50)
  }
  assert.ok(line !== undefined, `no "request failed" line in:\n${server.output()}`)
  const entry = JSON.parse(line) as { err?: { stack?: string } }
  const stack = entry.err?.stack
  assert.ok(typeof stack === 'string' && stack.includes('no such table: pets'), line)
  return stack.split('\n').filter(l => /^\s+at /.test(l))
}

describe('stack traces of the bundled build', () => {
  it('map to src/*.ts and to the bundled packages\' files with --enable-source-maps', async (t) => {
    const frames = await failedRead(t, { NODE_OPTIONS: '--enable-source-maps' })
    assert.ok(frames.some(f => /src\/store\/sqlite\/index\.ts:\d+:\d+/.test(f)), frames.join('\n'))
    assert.ok(frames.some(f => /src\/routes\/pets\.ts:\d+:\d+/.test(f)), frames.join('\n'))
    assert.ok(frames.some(f => /node_modules\/fastify\/lib\/[\w-]+\.js:\d+:\d+/.test(f)), frames.join('\n'))
    assert.ok(!frames.some(f => /dist\/(start-server|chunks\/)/.test(f)), frames.join('\n'))
  })

  it('keep function names and point into dist/ without source maps', async (t) => {
    const frames = await failedRead(t, {})
    // Our functions and the bundled Fastify's keep their names (the bundle is not minified).
    // esbuild may rename a class apart in the bundle's scope (SqliteStore → _SqliteStore).
    assert.ok(frames.some(f => /at _?SqliteStore\.getPet .*dist\/chunks\/[\w-]+\.js:\d+:\d+/.test(f)), frames.join('\n'))
    assert.ok(frames.some(f => /at preHandlerCallbackInner .*dist\/start-server\.js:\d+:\d+/.test(f)), frames.join('\n'))
  })
})
