import assert from 'node:assert/strict'
import { createServer, type AddressInfo } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { RawConnection, Unexpected } from '../../src/contract/wire.js'
import { onCleanup } from '../helpers/cleanup.js'

/*
 * The raw connection `petstore conformance` checks HTTP/1.1 framing with, against a TCP server that
 * answers every request with the bytes given: what a broken proxy sends must fail as framing.
 */

async function rawServer (t: TestContext, answer: string, closeAfter = false): Promise<RawConnection> {
  const server = createServer(socket => socket.on('data', () => {
    socket.write(answer)
    if (closeAfter) socket.end()
  }))
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onCleanup(t, () => new Promise<void>(resolve => server.close(() => resolve())))
  const conn = await RawConnection.open({ base: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), timeoutMs: 300 })
  onCleanup(t, () => conn.socket.destroy())
  conn.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  return conn
}

const framing = (got: RegExp) => (err: unknown) => err instanceof Unexpected && got.test(err.got)

describe('the raw HTTP/1.1 connection', () => {
  it('reads a Content-Length body and a chunked body, and keeps what follows', async (t) => {
    const plain = await rawServer(t, 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}')
    assert.deepEqual(await plain.read('GET').then(a => [a.status, a.framing, a.body.toString()]), [200, 'content-length', '{}'])
    const chunked = await rawServer(t, 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n')
    assert.deepEqual(await chunked.read('GET').then(a => [a.framing, a.body.toString()]), ['chunked', '{}'])
    const head = await rawServer(t, 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}')
    assert.equal((await head.read('HEAD')).framing, 'none')
    assert.equal(head.leftover().toString(), '{}')
  })

  it('reads a body delimited by the close, and waits for the close', async (t) => {
    const conn = await rawServer(t, 'HTTP/1.1 200 OK\r\n\r\nabc', true)
    assert.deepEqual(await conn.read('GET').then(a => [a.framing, a.body.toString()]), ['close', 'abc'])
    assert.equal((await conn.untilClosed()).length, 0)
  })

  it('fails a short body, a bad chunk size, a bad Content-Length and a connection left open', async (t) => {
    await assert.rejects((await rawServer(t, 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}')).read('GET'), framing(/^nothing more within 300 ms after "\{\}"$/))
    await assert.rejects((await rawServer(t, 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')).read('GET'), framing(/^"zz"$/))
    await assert.rejects((await rawServer(t, 'HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n{')).read('GET'), framing(/^"1, 1"$/))
    await assert.rejects((await rawServer(t, 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}', true)).read('GET'), framing(/^the connection closed after "\{\}"$/))
    const open = await rawServer(t, 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}')
    await open.read('GET')
    await assert.rejects(open.untilClosed(), framing(/^nothing more within 300 ms/))
  })
})
