import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MemoryWindows } from '../../src/http/rate-windows.js'

describe('MemoryWindows (in-memory fixed windows)', () => {
  it('counts a key within its window, which starts with its first request, then starts a new one', () => {
    const w = new MemoryWindows(1000)
    assert.deepEqual(w.hit('a', 5000), { current: 1, ttl: 1000 })
    assert.deepEqual(w.hit('a', 5400), { current: 2, ttl: 600 })
    assert.deepEqual(w.hit('b', 5400), { current: 1, ttl: 1000 }, 'each key has its own window')
    assert.deepEqual(w.hit('a', 5999), { current: 3, ttl: 1 })
    assert.deepEqual(w.hit('a', 6000), { current: 1, ttl: 1000 }, 'the window ended: a new one starts')
  })

  it('holds at most maxKeys windows: ended ones go first, then the key counted first', () => {
    const w = new MemoryWindows(1000, 3)
    w.hit('old', 0)
    w.hit('x', 500)
    w.hit('y', 600)
    w.hit('z', 1200) // 'old' ended at 1000: dropped
    assert.equal(w.size, 3)
    assert.equal(w.hit('x', 1300).current, 2, 'live windows kept their counts')
    w.hit('w', 1300) // none ended: the first counted ('x') goes
    assert.equal(w.size, 3)
    assert.equal(w.hit('x', 1310).current, 1, 'an evicted key starts afresh')
  })
  it('a key whose window was renewed is not evicted before a key whose window started later', () => {
    const w = new MemoryWindows(1000, 2)
    w.hit('a', 0)
    w.hit('b', 500)
    assert.equal(w.hit('a', 1200).current, 1, "a's first window ended: a new one starts at 1200")
    w.hit('c', 1300) // full, nothing ended: the window that started longest ago is b's (500), not a's (1200)
    assert.equal(w.size, 2)
    assert.equal(w.hit('a', 1400).current, 2, 'a kept its renewed window')
    assert.equal(w.hit('b', 1400).current, 1, 'b was the one dropped')
  })

  it('drops every ended window when full, and only those', () => {
    const w = new MemoryWindows(1000, 4)
    w.hit('e1', 0)
    w.hit('e2', 100)
    w.hit('live', 900)
    w.hit('live2', 950)
    w.hit('n', 1200) // e1 and e2 ended (1000, 1100): both dropped, the live ones stay
    assert.equal(w.size, 3)
    assert.equal(w.hit('live', 1250).current, 2)
    assert.equal(w.hit('live2', 1250).current, 2)
  })
})
