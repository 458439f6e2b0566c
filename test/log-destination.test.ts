import assert from 'node:assert/strict'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { LogDestination } from '../src/log-destination.js'
import { tempDir } from './helpers/app.js'

describe('LogDestination', () => {
  it('writes every line, in order, by the time end() resolves', async (t) => {
    const file = join(tempDir(t), 'log')
    const fd = openSync(file, 'w')
    t.after(() => closeSync(fd))
    const dest = new LogDestination(fd, 16 * 1024 * 1024)
    const lines: string[] = []
    for (let i = 0; i < 5000; i++) {
      const line = `{"n":${i},"s":"${'é'.repeat(i % 7)}"}\n`
      lines.push(line)
      assert.equal(dest.write(line), true)
      // Some lines come while a write is under way, some on later turns of the event loop.
      if (i % 500 === 0) await new Promise(resolve => setTimeout(resolve, 7))
    }
    await dest.end()
    assert.equal(readFileSync(file, 'utf8'), lines.join(''))
    assert.equal(dest.dropped, 0)
  })

  it('drops lines past the byte bound instead of holding them, and counts them', async (t) => {
    const file = join(tempDir(t), 'log')
    const fd = openSync(file, 'w')
    t.after(() => closeSync(fd))
    const dest = new LogDestination(fd, 100)
    const line = `{"x":"${'a'.repeat(30)}"}\n` // 39 bytes
    assert.deepEqual([dest.write(line), dest.write(line), dest.write(line), dest.write('{"é":1}\n')], [true, true, false, true])
    assert.equal(dest.dropped, 1)
    await dest.end()
    assert.equal(readFileSync(file, 'utf8'), line + line + '{"é":1}\n')
    // Written out, the bound is free again.
    assert.equal(dest.write(line), true)
    await dest.end()
    assert.equal(readFileSync(file, 'utf8').length, 3 * line.length + 8)
  })
})
