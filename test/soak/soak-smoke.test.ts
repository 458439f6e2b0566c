import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { formatSoak, runSoak } from '../helpers/soak.js'

describe('soak (smoke form; `npm run test:soak` runs the bounded soak)', () => {
  it('a few seconds of mixed load at half the measured peak: no 5xx, no failed connection', async (t) => {
    const dir = tempDir(t)
    const r = await runSoak({ dbPath: join(dir, 'soak.db'), seconds: 6, probeSeconds: 2, fraction: 0.5, writeShare: 0.2, windowSeconds: 2 })
    t.diagnostic(formatSoak(r, 6))
    assert.equal(r.serverErrors, 0)
    assert.equal(r.clientErrors, 0)
    assert.ok(r.requests > 0)
  })
})
