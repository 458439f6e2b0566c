import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { runCrashRounds } from '../helpers/crash.js'

describe('crash consistency (short form; `npm run test:crash` runs the long one)', () => {
  it('SIGKILL at random moments loses no acknowledged create, stores nothing unsent, no duplicates, integrity ok', async (t) => {
    const dir = tempDir(t)
    const stats = await runCrashRounds({ dbPath: join(dir, 'crash.db'), rounds: 3, writers: 8, killAfterMs: [150, 600] })
    t.diagnostic(`rounds ${stats.rounds}, acknowledged ${stats.acknowledged}, failed ${stats.failed}, unknown ${stats.unknown} (${stats.unknownStored} of them stored), stored ${stats.stored}`)
    assert.deepEqual(stats.violations, [])
    assert.equal(stats.rounds, 3)
    assert.ok(stats.acknowledged > 0, 'writers got creates acknowledged between kills')
  })
})
