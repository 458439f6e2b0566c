/*
 * The test runner (scripts/run-tests.mjs, `npm test`) as a contributor meets it: --help says how to
 * choose files and what each component serves; a run of one file looks for and reports only what
 * that file needs.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from './helpers/app.js'
import { childEnv, ROOT } from './helpers/process.js'

function runner (args: string[], env: Record<string, string> = {}): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return new Promise(resolve => {
    execFile(process.execPath, ['scripts/run-tests.mjs', ...args], { cwd: ROOT, env: childEnv(env), timeout: 300_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr })
    })
  })
}

describe('npm test (scripts/run-tests.mjs)', () => {
  it('--help prints how to run all, one file or a folder, and which files need each component; exit 0', async () => {
    const r = await runner(['--help'])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^Usage: npm test /)
    assert.match(r.stdout, /npm test +every test file/)
    assert.match(r.stdout, /npm test -- test\/routes\/root +one file/)
    assert.match(r.stdout, /npm test -- test\/blackbox .*folders/)
    assert.match(r.stdout, /\n {2}chromium \((present|missing — apt-get install chromium[^)]*)\): \d+ file\(s\)\n(?: {6}test\/.*\n)*? {6}test\/docs\/docs-page\.test\.ts\n/)
    assert.match(r.stdout, /\n {2}postgresql \([^)]*\): \d+ file\(s\)\n(?: {6}test\/.*\n)*? {6}test\/blackbox\/cli-postgres\.test\.ts\n/)
  })

  it('an unknown option is a usage error (exit 2); a text no path contains says so (exit 1)', async () => {
    const bad = await runner(['--bogus'])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /^npm test: unknown option --bogus\n\nUsage: npm test /)
    const none = await runner(['no/such/test'])
    assert.deepEqual([none.code, none.stderr], [1, 'no test file\'s path contains "no/such/test" (npm test -- --help shows how to choose)\n'])
  })

  it('one file on a machine lacking components it does not need: they go unmentioned, exit 0', async (t) => {
    // A PATH with a shell and nothing else: Chromium, redis-server, strace, promtool and the rest are missing.
    const bin = tempDir(t)
    symlinkSync('/bin/sh', join(bin, 'sh'))
    const r = await runner(['test/routes/root'], { PATH: bin })
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /ℹ pass [1-9]/)
    assert.doesNotMatch(r.stdout + r.stderr, /chromium|postgres|redis|NOT EVERYTHING RAN/i)
  })

  it('a file that needs a missing component does not run, and the end of the output names that component alone', async (t) => {
    const bin = tempDir(t)
    symlinkSync('/bin/sh', join(bin, 'sh'))
    const r = await runner(['test/docs/docs-page'], { PATH: bin })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /NOT EVERYTHING RAN[^]*\n {2}chromium — get it with: apt-get install chromium[^]*test\/docs\/docs-page\.test\.ts/)
    assert.doesNotMatch(r.stderr, /\n {2}(redis-server|strace|promtool|podman) — /)
  })
})
