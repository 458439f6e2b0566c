import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { GroupCommit } from '../../src/store/group-commit.js'

describe('GroupCommit', () => {
  it('commits what arrives together as one batch and answers each submitter with its own result', async () => {
    const batches: number[][] = []
    const gc = new GroupCommit<number, string>(async (items) => { batches.push(items); return items.map(i => `r${i}`) })
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => gc.submit(i)))
    assert.deepEqual(results, Array.from({ length: 50 }, (_, i) => `r${i}`))
    assert.equal(batches.length, 1)
  })

  it('queues what arrives during a commit for the next batch, never two commits at once', async () => {
    let running = 0
    const batches: number[][] = []
    let release!: () => void
    let started!: () => void
    const firstStarted = new Promise<void>(resolve => { started = resolve })
    const firstReleased = new Promise<void>(resolve => { release = resolve })
    const gc = new GroupCommit<number, number>(async (items) => {
      assert.equal(++running, 1, 'two commits overlapped')
      batches.push(items)
      if (batches.length === 1) {
        started()
        await firstReleased
      }
      running--
      return items
    }, 10)
    const first = Array.from({ length: 5 }, (_, i) => gc.submit(i))
    await firstStarted
    const second = Array.from({ length: 25 }, (_, i) => gc.submit(100 + i))
    release()
    assert.deepEqual(await Promise.all([...first, ...second]), [0, 1, 2, 3, 4, ...Array.from({ length: 25 }, (_, i) => 100 + i)])
    assert.deepEqual(batches.map(b => b.length), [5, 10, 10, 5])
    await gc.drain()
  })

  it('rejects every submitter of a failed batch, and carries on with the next', async () => {
    let calls = 0
    const gc = new GroupCommit<number, number>(async (items) => {
      if (calls++ === 0) throw new Error('disk full')
      return items
    })
    const failed = [gc.submit(1), gc.submit(2)]
    for (const p of failed) await assert.rejects(p, /disk full/)
    assert.equal(await gc.submit(3), 3)
  })
})
