// requires: script
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir, testDatabaseUrl, type StoreKind } from '../helpers/app.js'
import { CLI_PATH, childEnv, ROOT, runCli } from '../helpers/process.js'
import { afterStoreLines, exportLines, sampleRecords, tableCounts, writeLines } from '../helpers/transfer.js'

for (const [from, to] of [['sqlite', 'postgres'], ['postgres', 'sqlite']] as Array<[StoreKind, StoreKind]>) {
  describe(`petstore copy ${from} → ${to}`, () => {
    it('copies into an empty store and prints matching counts and pets checksums read from both sides', async (t) => {
      const dir = tempDir(t)
      const source = { DATABASE_URL: await testDatabaseUrl(t, from, dir) }
      const target = await testDatabaseUrl(t, to, tempDir(t))
      const lines = exportLines(sampleRecords(1200))
      assert.equal((await runCli(['import', writeLines(join(dir, 'seed.ndjson'), lines)], source)).code, 0)
      const sha = /"petsSha256":"([0-9a-f]{64})"/.exec(lines.at(-1)!)![1]!

      const r = await runCli(['copy', '--to', target], source)
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stdout, [
        `\tsource (${from})\ttarget (${to})`,
        'settings\t1\t1', 'apiKeys\t2\t2', 'pets\t1200\t1200', 'idempotencyKeys\t1\t1',
        `petsSha256\t${sha}\t${sha}`, ''
      ].join('\n'))
      assert.match(r.stderr, /^petstore: store: \S+ .*\npetstore: target: \S+ .*\ncopy verified: 1200 pets, same counts and pets checksum on both stores\n$/)
      assert.deepEqual(await tableCounts(target), { settings: 1, api_keys: 2, pets: 1200, idempotency_keys: 1 })

      // Exported again from the target, every line after the header is the file the source was seeded with.
      const out = join(dir, 'target.ndjson')
      assert.equal((await runCli(['export', '--out', out], { DATABASE_URL: target })).code, 0)
      assert.deepEqual(readFileSync(out, 'utf8').trimEnd().split('\n').slice(1), lines.slice(1))

      const again = await runCli(['copy', '--to', target, '--json'], source)
      assert.equal(again.code, 1)
      assert.equal(again.stdout, '')
      assert.equal(afterStoreLines(again.stderr), 'petstore: the target store is not empty (1200 pets, 2 API keys, 1 Idempotency-Keys); copy only into an empty store\n')
    })
  })
}

describe('petstore copy (usage)', () => {
  it('--json prints the verification as JSON, with the peak RSS', async (t) => {
    const source = { DATABASE_URL: await testDatabaseUrl(t, 'sqlite') }
    assert.equal((await runCli(['import', writeLines(join(tempDir(t), 'seed.ndjson'), exportLines(sampleRecords(5)))], source)).code, 0)
    const r = await runCli(['copy', '--to', await testDatabaseUrl(t, 'sqlite'), '--json'], source)
    assert.equal(r.code, 0, r.stderr)
    const summary = JSON.parse(r.stdout) as { verified: boolean, source: { counts: unknown, petsSha256: string }, target: { counts: unknown, petsSha256: string }, peakRssBytes: number }
    assert.equal(summary.verified, true)
    assert.deepEqual(summary.target.counts, summary.source.counts)
    assert.equal(summary.target.petsSha256, summary.source.petsSha256)
    assert.ok(summary.peakRssBytes > 1e6)
  })

  it('refuses copying a store onto itself, and a malformed --to (exit 2)', async (t) => {
    const url = await testDatabaseUrl(t, 'sqlite')
    const self = await runCli(['copy', '--to', url], { DATABASE_URL: url })
    assert.deepEqual([self.code, afterStoreLines(self.stderr)], [1, 'petstore: --to names the DATABASE_URL store itself\n'])
    const bad = await runCli(['copy', '--to', 'mysql://x'], { DATABASE_URL: url })
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /--to: must start with sqlite: or postgres:\/\//)
  })
})

describe('backup, export, import, copy (usage)', () => {
  it('print --help (exit 0) and answer usage errors with exit 2', async (t) => {
    const env = { DATABASE_URL: await testDatabaseUrl(t, 'sqlite') }
    for (const cmd of ['backup', 'export', 'import', 'copy']) {
      const r = await runCli([cmd, '--help'], env)
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`^Usage: petstore ${cmd} `))
    }
    const cases: Array<[string[], RegExp]> = [
      [['backup'], /missing required argument 'path'/],
      [['copy'], /required option '--to <url>' not specified/],
      [['export', '--json'], /--json needs --out/],
      [['import', '--bogus'], /unknown option '--bogus'/]
    ]
    for (const [args, stderr] of cases) {
      const r = await runCli(args, env)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, stderr)
      assert.equal(r.stdout, '')
    }
  })
})

describe('progress output', () => {
  it('draws a progress bar on a terminal and stays silent on a pipe', async (t) => {
    const dir = tempDir(t)
    const env = { DATABASE_URL: await testDatabaseUrl(t, 'sqlite', dir) }
    assert.equal((await runCli(['import', writeLines(join(dir, 'seed.ndjson'), exportLines(sampleRecords(3000)))], env)).code, 0)
    const piped = await runCli(['export', '--out', join(dir, 'piped.ndjson')], env)
    // Piped: no progress bar; the store line and the summary only.
    assert.deepEqual([piped.code, piped.stdout], [0, ''])
    assert.match(piped.stderr, /^petstore: store: SQLite .*\nexported 3000 pets, 2 API keys, 1 Idempotency-Keys, 1 settings from sqlite to .*\n$/)

    // util-linux `script` runs the command on a pseudo-terminal.
    const out = join(dir, 'tty.ndjson')
    const tty = spawnSync('script', ['-qefc', `${process.execPath} ${CLI_PATH} export --out ${out}`, '/dev/null'], { cwd: ROOT, env: childEnv(env), encoding: 'utf8', timeout: 30_000 })
    assert.equal(tty.status, 0, tty.stderr)
    assert.match(tty.stdout, /export .*100% \| 3004\/3004 records \| \d+\/s/)
    assert.match(tty.stdout, /exported 3000 pets, 2 API keys, 1 Idempotency-Keys, 1 settings from sqlite to /)
    assert.ok(existsSync(out))
  })
})
