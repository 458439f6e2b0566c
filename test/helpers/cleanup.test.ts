import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { onCleanup } from './cleanup.js'

// The tests' own cleanup order: a server must be stopped before the directory it writes into is
// removed, and one failing cleanup must not leave the others (a kill) undone.
describe('onCleanup (test helper)', () => {
  function fakeContext (): { t: TestContext, runAfter: () => Promise<unknown> } {
    const hooks: Array<() => unknown> = []
    const t = { after: (fn: () => unknown) => { hooks.push(fn) } } as unknown as TestContext
    return { t, runAfter: async () => { for (const h of hooks) await h() } }
  }

  it('runs the cleanups last registered first, through one after hook', async () => {
    const { t, runAfter } = fakeContext()
    const ran: string[] = []
    onCleanup(t, () => { ran.push('remove directory') })
    onCleanup(t, async () => { await new Promise(resolve => setTimeout(resolve, 5)); ran.push('kill server') })
    await runAfter()
    assert.deepEqual(ran, ['kill server', 'remove directory'])
  })

  it('runs every cleanup when some fail, then throws their errors', async () => {
    const { t, runAfter } = fakeContext()
    const ran: string[] = []
    onCleanup(t, () => { ran.push('a') })
    onCleanup(t, () => { throw new Error('b failed') })
    onCleanup(t, () => { ran.push('c') })
    await assert.rejects(runAfter(), /b failed/)
    assert.deepEqual(ran, ['c', 'a'])
    const two = fakeContext()
    onCleanup(two.t, () => { throw new Error('x') })
    onCleanup(two.t, () => { throw new Error('y') })
    await assert.rejects(two.runAfter(), (err: unknown) => err instanceof AggregateError && err.errors.length === 2)
  })
})
