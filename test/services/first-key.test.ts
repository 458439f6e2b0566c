import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { describe, it, type TestContext } from 'node:test'
import pino from 'pino'
import { loadConfig, PROJECT_ROOT } from '../../src/config/index.js'
import { handOutFirstKey } from '../../src/services/first-key.js'
import { openStore } from '../../src/store/index.js'
import { tempDir } from '../helpers/app.js'
import { onCleanup } from '../helpers/cleanup.js'

/** The image's setting (Dockerfile): the hint names the container form of the CLI. */
const IMAGE_CLI = 'docker exec <container> petstore'

/** A first start on an empty SQLite store, with the environment given; what the log and stderr said. */
async function firstStart (t: TestContext, env: Record<string, string>, toTerminal: boolean, cwd?: string): Promise<{ log: string, stderr: string, keyFile: string }> {
  const dir = tempDir(t)
  const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, ...env }, cwd ?? dir)
  const store = await openStore(config)
  onCleanup(t, () => store.close())
  let log = ''
  const logger = pino(new Writable({ write (chunk: Buffer, _enc, done) { log += chunk.toString(); done() } }))
  let stderr = ''
  const write = process.stderr.write
  if (toTerminal) process.stderr.write = (chunk: string | Uint8Array) => { stderr += chunk.toString(); return true }
  try {
    await handOutFirstKey(store, { url: 'http://127.0.0.1:8080', firstKeyFile: config.firstKeyFile, cli: config.cli }, logger, toTerminal)
  } finally {
    process.stderr.write = write
  }
  assert.equal(await store.countApiKeys(), 1)
  return { log, stderr, keyFile: config.firstKeyFile }
}

describe('the first key hint names the CLI as it runs where the server does', () => {
  it('in a checkout (PETSTORE_CLI unset): the launcher bin/petstore, in the log line and on a terminal; its full path from another directory', async (t) => {
    const file = await firstStart(t, {}, false)
    const line = JSON.parse(file.log) as { msg: string, file: string }
    assert.equal(line.file, file.keyFile)
    // The server ran from a temporary directory: the launcher's full path.
    assert.ok(line.msg.endsWith(`Make more with: ${join(PROJECT_ROOT, 'bin', 'petstore')} keys create --name NAME`), line.msg)
    assert.match(readFileSync(file.keyFile, 'utf8'), /^psk_\S+\n$/)
    const terminal = await firstStart(t, {}, true, PROJECT_ROOT)
    assert.match(terminal.stderr, /\nMake more with: bin\/petstore keys create --name NAME\n/)
    assert.equal(terminal.log, '')
  })

  it('each deployment names its own form: compose, the scaled compose, Kubernetes, systemd', () => {
    const read = (f: string) => readFileSync(join(PROJECT_ROOT, f), 'utf8')
    assert.match(read('compose.yaml'), /PETSTORE_CLI: docker compose exec petstore petstore\n/)
    assert.match(read('compose.scale.yaml'), /PETSTORE_CLI: docker compose -f compose.scale.yaml exec app1 petstore\n/)
    assert.match(read('deploy/kubernetes/deployment.yaml'), /name: PETSTORE_CLI\n\s+value: kubectl -n petstore exec deploy\/petstore -- petstore\n/)
    assert.match(read('deploy/systemd/petstore.service'), /"PETSTORE_CLI=sudo -u petstore DATABASE_URL=sqlite:\/var\/lib\/petstore\/petstore.db \/opt\/petstore\/bin\/petstore"/)
  })

  it('in the image (PETSTORE_CLI set by the Dockerfile): docker exec <container> petstore, never npx', async (t) => {
    const file = await firstStart(t, { PETSTORE_CLI: IMAGE_CLI }, false)
    const line = JSON.parse(file.log) as { msg: string }
    assert.match(line.msg, /Make more with: docker exec <container> petstore keys create --name NAME$/)
    assert.doesNotMatch(line.msg, /npx/)
    const terminal = await firstStart(t, { PETSTORE_CLI: IMAGE_CLI }, true)
    assert.match(terminal.stderr, /\nMake more with: docker exec <container> petstore keys create --name NAME\n/)
    assert.doesNotMatch(terminal.stderr, /npx/)
  })

  it('an empty PETSTORE_CLI is refused, naming the variable', () => {
    assert.throws(() => loadConfig({ PETSTORE_CLI: '' }, '/x'), /PETSTORE_CLI/)
  })
})
