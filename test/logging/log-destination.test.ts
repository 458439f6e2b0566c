import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { LogDestination } from '../../src/logging/log-destination.js'
import { tempDir } from '../helpers/app.js'
import { ROOT } from '../helpers/process.js'
import { onCleanup } from '../helpers/cleanup.js'

describe('LogDestination', () => {
  it('writes every line, in order, by the time end() resolves', async (t) => {
    const file = join(tempDir(t), 'log')
    const fd = openSync(file, 'w')
    onCleanup(t, () => closeSync(fd))
    const dest = new LogDestination(fd, 16 * 1024 * 1024)
    const lines: string[] = []
    for (let i = 0; i < 5000; i++) {
      const line = `{"n":${i},"s":"${'é'.repeat(i % 7)}"}\n`
      lines.push(line)
      assert.equal(dest.write(line), true)
      // Some lines come while a write is under way, some on later turns of the event loop.
      if (i % 500 === 0) await new Promise(resolve => setTimeout(resolve, 7))
    }
    // Batches larger than the batch buffer it starts with: one line of 200 KB, then 3,000 in one turn.
    const long = `{"long":"${'ü'.repeat(100_000)}"}\n`
    lines.push(long)
    assert.equal(dest.write(long), true)
    await new Promise(resolve => setTimeout(resolve, 7))
    for (let i = 0; i < 3000; i++) {
      const line = `{"m":${i},"pad":"${'x'.repeat(80)}"}\n`
      lines.push(line)
      assert.equal(dest.write(line), true)
    }
    await dest.end()
    assert.equal(readFileSync(file, 'utf8'), lines.join(''))
    assert.equal(dest.dropped, 0)
  })

  it('drops lines past the byte bound instead of holding them, and counts them', async (t) => {
    const file = join(tempDir(t), 'log')
    const fd = openSync(file, 'w')
    onCleanup(t, () => closeSync(fd))
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

  it('counts the lines waiting when the reader has gone (EPIPE) as dropped, and every line after', async (t) => {
    // A child's stdout is a pipe whose reader (`true`) has exited: its first write fails with EPIPE.
    const script = join(tempDir(t), 'child.mjs')
    writeFileSync(script, `
      import { LogDestination } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/logging/log-destination.js')).href)}
      await new Promise(resolve => setTimeout(resolve, 300)) // the reader has exited by now
      const dest = new LogDestination(1, 16 * 1024 * 1024)
      for (let i = 0; i < 3; i++) dest.write('{"n":' + i + '}\\n')
      await dest.end() // resolves once the write has failed
      const refused = dest.write('{"n":3}\\n')
      process.stderr.write(JSON.stringify({ dropped: dest.dropped, refused }))
    `)
    const err = await new Promise<string>((resolve, reject) => {
      execFile('sh', ['-c', `"${process.execPath}" "${script}" | true`], (e, _stdout, stderr) => {
        if (e !== null) reject(e)
        else resolve(stderr)
      })
    })
    assert.deepEqual(JSON.parse(err), { dropped: 4, refused: false })
  })

  it('at a process.exit without end(), writes every waiting line out through a full, non-blocking pipe (EAGAIN, partial writes)', async (t) => {
    // A child writes ~2.9 MB of lines to its stdout, a pipe nobody reads for half a second (64 KiB
    // fill it), and exits after 50 ms without end(): the lines wait in the destination, and the write
    // at 'exit' meets EAGAIN and partial writes until the reader starts.
    const script = join(tempDir(t), 'child.mjs')
    writeFileSync(script, `
      import { LogDestination } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/logging/log-destination.js')).href)}
      void process.stdout.isTTY // as openLog does: Node opens stdout, which makes the pipe non-blocking
      const dest = new LogDestination(1, 64 * 1024 * 1024)
      for (let i = 0; i < 25000; i++) dest.write(JSON.stringify({ n: i, pad: 'x'.repeat(100) }) + '\\n')
      setTimeout(() => process.exit(0), 50)
    `)
    const out = await new Promise<string>((resolve, reject) => {
      execFile('sh', ['-c', `"${process.execPath}" "${script}" | { sleep 0.5; cat; }`], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
        if (err !== null) reject(err)
        else resolve(stdout)
      })
    })
    const lines = out.split('\n')
    assert.equal(lines.pop(), '', 'the output ends with a whole line')
    assert.equal(lines.length, 25000)
    lines.forEach((line, i) => { assert.equal((JSON.parse(line) as { n: number }).n, i) })
  })

  it('at a process.exit with a stdout nobody reads, gives up on the waiting lines after about 2 s instead of hanging', async (t) => {
    // The child's stdout is a pipe whose reader (sleep) never reads: the write at 'exit' meets EAGAIN
    // until it gives up. The child reports its own end on stderr, which the reader does not hold.
    const script = join(tempDir(t), 'child.mjs')
    writeFileSync(script, `
      import { LogDestination } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/logging/log-destination.js')).href)}
      void process.stdout.isTTY
      const dest = new LogDestination(1, 64 * 1024 * 1024)
      for (let i = 0; i < 25000; i++) dest.write(JSON.stringify({ n: i, pad: 'x'.repeat(100) }) + '\\n')
      setTimeout(() => {
        const started = Date.now()
        process.once('exit', () => process.stderr.write(String(Date.now() - started)))
        process.exit(0)
      }, 50)
    `)
    const waited = await new Promise<number>((resolve, reject) => {
      execFile('sh', ['-c', `"${process.execPath}" "${script}" | sleep 8`], { timeout: 30_000 }, (err, _stdout, stderr) => {
        if (err !== null && stderr === '') reject(err)
        else resolve(Number(stderr))
      })
    })
    assert.ok(waited >= 1500 && waited < 5000, `the exit waited ${waited} ms`)
  })
})
