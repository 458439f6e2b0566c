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
    }, { maxBatch: 10 })
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

  it('with minIntervalMs, a lone write starts at once, and writes that follow wait out the interval and go together', async () => {
    const starts: Array<{ at: number, size: number }> = []
    const gc = new GroupCommit<number, number>(async (items) => { starts.push({ at: performance.now(), size: items.length }); return items }, { minIntervalMs: 40 })
    const t0 = performance.now()
    assert.equal(await gc.submit(1), 1)
    assert.ok(starts[0]!.at - t0 < 30, `a lone write waited ${(starts[0]!.at - t0).toFixed(1)} ms`)
    // Five writes a few ms apart, right after the first batch: one batch, started once the interval is over.
    const later: Array<Promise<number>> = []
    for (let i = 0; i < 5; i++) {
      later.push(gc.submit(10 + i))
      await new Promise(resolve => setTimeout(resolve, 3))
    }
    assert.deepEqual(await Promise.all(later), [10, 11, 12, 13, 14])
    assert.deepEqual(starts.map(s => s.size), [1, 5])
    // Node's timers keep a millisecond clock of their own: a few ms of slack, far from no wait at all.
    assert.ok(starts[1]!.at - starts[0]!.at >= 35, `batches started ${(starts[1]!.at - starts[0]!.at).toFixed(1)} ms apart`)
  })

  it('with minIntervalMs, fullBatch waiting writes start a batch without waiting, also when they arrive during the wait', async () => {
    const sizes: number[] = []
    const gc = new GroupCommit<number, number>(async (items) => { sizes.push(items.length); return items }, { minIntervalMs: 10_000, fullBatch: 8 })
    await gc.submit(0)
    const t = performance.now()
    await Promise.all(Array.from({ length: 8 }, (_, i) => gc.submit(i)))
    // Three, then five more a few ms later, while the batch waits out the interval.
    const first = Array.from({ length: 3 }, (_, i) => gc.submit(i))
    await new Promise(resolve => setTimeout(resolve, 20))
    await Promise.all([...first, ...Array.from({ length: 5 }, (_, i) => gc.submit(i))])
    assert.ok(performance.now() - t < 5_000, 'a full batch waited out the interval')
    assert.deepEqual(sizes, [1, 8, 8])
  })
})
