/*
 * Another SQLite store moved over DATABASE_URL's file: the `.store-id` marker beside it names this
 * deployment's store, so the compiled server and every `petstore` command that opens the path refuse
 * it with the way out, and change nothing, until the marker is deleted (a restore). A restart of the
 * same store, and a backup of it put back in its place, start as before.
 */
import assert from 'node:assert/strict'
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { runCli, runServerToExit, startServer, waitForOutput } from '../helpers/process.js'

const escaped = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

async function createPet (url: string, key: string): Promise<string> {
  const res = await fetch(`${url}/v1/pets`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' })
  assert.equal(res.status, 201, await res.clone().text())
  return await res.text()
}

describe('a SQLite store moved over the path of another (black box)', () => {
  it('refuses a server start and every command over it, changing nothing, until the marker is deleted', async (t) => {
    const dir = tempDir(t)
    const ours = join(dir, 'petstore.db')
    const marker = `${ours}.store-id`
    const env = { DATABASE_URL: `sqlite:${ours}`, METRICS_PORT: 'off' }
    // This deployment's store, served once and stopped.
    const made = await runCli(['keys', 'create', '--name', 'ours', '--create'], env)
    assert.equal(made.code, 0, made.stderr)
    const server = await startServer(t, env)
    await createPet(server.url, made.stdout.trim())
    server.child.kill('SIGTERM')
    assert.deepEqual(await server.exited, { code: 0, signal: null })
    const ourId = readFileSync(marker, 'utf8').trim()

    // Another store (no key yet: a start on it would make a first key), moved over ours.
    const elsewhere = join(dir, 'elsewhere')
    mkdirSync(elsewhere)
    const migrated = await runCli(['migrate'], { DATABASE_URL: `sqlite:${join(elsewhere, 'petstore.db')}` })
    assert.equal(migrated.code, 0, migrated.stderr)
    assert.deepEqual([`${ours}-wal`, `${ours}-shm`].filter(f => existsSync(f)), [], 'a clean stop leaves no log')
    renameSync(join(elsewhere, 'petstore.db'), ours)
    const foreign = readFileSync(ours)

    const refused = await runServerToExit(env)
    assert.equal(refused.code, 1, refused.stdout + refused.stderr)
    const said = new RegExp(`the SQLite database ${escaped(ours)} is not the store ${escaped(marker)} says was created there \\(store ${ourId}\\): it is store (\\d+), so another database was moved or copied over it; it is not served\\. ` +
      `Put this store's database back, or, if this database is meant to be here \\(a restore\\), delete ${escaped(marker)} and start again`)
    const theirId = said.exec(refused.stdout + refused.stderr)?.[1]
    assert.ok(theirId !== undefined && theirId !== ourId, refused.stdout + refused.stderr)
    assert.equal(existsSync(join(dir, 'first-api-key.txt')), false, 'a first key was made')

    // A third store, the source of an export, a copy into our path, and a copy's target.
    const third = { DATABASE_URL: `sqlite:${join(dir, 'third.db')}` }
    assert.equal((await runCli(['keys', 'create', '--name', 'third', '--create'], third)).code, 0)
    const exported = join(dir, 'third.ndjson')
    assert.equal((await runCli(['export', '--out', exported], third)).code, 0)
    const commands: Array<[string[], Record<string, string>]> = [
      [['keys', 'list'], env], [['keys', 'create', '--name', 'x'], env], [['migrate'], env],
      [['export', '--out', join(dir, 'out.ndjson')], env], [['backup', join(dir, 'out.db')], env],
      [['copy', '--to', `sqlite:${join(dir, 'copy.db')}`], env], [['import', exported], env],
      [['copy', '--to', `sqlite:${ours}`], third]
    ]
    for (const [args, e] of commands) {
      const r = await runCli(args, e)
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}${r.stderr}`)
      assert.match(r.stderr, new RegExp(`is not the store ${escaped(marker)} says was created there \\(store ${ourId}\\): it is store ${theirId}, so another database was moved or copied over it; ` +
        `the command leaves it untouched\\. Put this store's database back, or, if this database is meant to be here \\(a restore\\), delete ${escaped(marker)} and run the command again`), args.join(' '))
    }
    assert.deepEqual(['out.ndjson', 'out.db', 'copy.db', 'first-api-key.txt'].filter(f => existsSync(join(dir, f))), [])
    assert.deepEqual(readFileSync(ours), foreign, 'the moved store was changed')
    assert.equal(readFileSync(marker, 'utf8').trim(), ourId, 'the marker was rewritten')

    // The way out: the marker deleted, the moved store is served as this deployment's, with a first key.
    rmSync(marker)
    const restored = await startServer(t, env)
    assert.equal(readFileSync(marker, 'utf8').trim(), theirId)
    await waitForOutput(restored, /first-api-key\.txt/)
    await createPet(restored.url, readFileSync(join(dir, 'first-api-key.txt'), 'utf8').trim())
  })

  it('starts as before on the same store after a restart, and on a backup of it put in its place beside the marker', async (t) => {
    const dir = tempDir(t)
    const ours = join(dir, 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${ours}`, METRICS_PORT: 'off' }
    const key = (await runCli(['keys', 'create', '--name', 'ours', '--create'], env)).stdout.trim()
    const first = await startServer(t, env)
    const pet = await createPet(first.url, key)
    const backup = join(dir, 'backups', 'petstore.db')
    const backedUp = await runCli(['backup', backup], env)
    assert.equal(backedUp.code, 0, backedUp.stderr)
    await createPet(first.url, key)
    first.child.kill('SIGTERM')
    assert.deepEqual(await first.exited, { code: 0, signal: null })

    const again = await startServer(t, env)
    const listed = await fetch(`${again.url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal((await listed.json() as unknown[]).length, 2)
    again.child.kill('SIGTERM')
    assert.deepEqual(await again.exited, { code: 0, signal: null })

    // The backup in place of the database, the marker left where it is: the same store, served.
    for (const f of [`${ours}-wal`, `${ours}-shm`]) rmSync(f, { force: true })
    copyFileSync(backup, ours)
    const fromBackup = await startServer(t, env)
    const read = await fetch(`${fromBackup.url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(read.status, 200)
    assert.deepEqual(await read.json(), [JSON.parse(pet)])
  })
})
