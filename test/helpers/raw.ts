import { connect } from 'node:net'
import type { TestContext } from 'node:test'
import type { AddressInfo } from 'node:net'
import { buildTestApp, type TestApp } from './app.js'

/** The test app listening on an ephemeral loopback port (closed with the test). */
export async function listeningApp (t: TestContext, env?: Record<string, string>): Promise<TestApp & { port: number }> {
  const ta = await buildTestApp(t, env === undefined ? {} : { env })
  await ta.app.listen({ port: 0, host: '127.0.0.1' })
  return { ...ta, port: (ta.app.server.address() as AddressInfo).port }
}

export interface RawResponse { status: number, headers: Record<string, string>, body: string, raw: string }

/** Writes raw bytes on a fresh connection and reads the first response (the connection is then dropped). */
export function rawRequest (port: number, data: string | Buffer, timeoutMs = 10000): Promise<RawResponse> {
  const head = (typeof data === 'string' ? data : data.toString('latin1')).startsWith('HEAD ')
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let buf = Buffer.alloc(0)
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no response within ${timeoutMs} ms; got ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`)) }, timeoutMs)
    const done = () => {
      const text = buf.toString('utf8')
      const top = text.split('\r\n\r\n', 1)[0]!
      const m = /^HTTP\/1\.1 (\d{3})/.exec(top)
      if (m === null) return false
      const headers: Record<string, string> = {}
      for (const line of top.split('\r\n').slice(1)) {
        const i = line.indexOf(':')
        headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim()
      }
      let body = text.slice(top.length + 4)
      const len = headers['content-length']
      if (!head && len !== undefined && Buffer.byteLength(body) < Number(len)) return false
      // Only the first response: a pipelined second one may follow.
      if (len !== undefined) body = head ? '' : Buffer.from(body).subarray(0, Number(len)).toString('utf8')
      if (len === undefined && headers['transfer-encoding'] === 'chunked' && !body.endsWith('0\r\n\r\n')) return false
      clearTimeout(timer)
      socket.destroy()
      resolve({ status: Number(m[1]), headers, body, raw: text })
      return true
    }
    socket.on('data', (d: Buffer) => { buf = Buffer.concat([buf, d]); done() })
    socket.on('error', () => { /* a reset after the response is fine; no response is reported on close */ })
    socket.on('close', () => { if (!done()) { clearTimeout(timer); reject(new Error(`connection closed without a response; got ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`)) } })
    socket.write(data)
  })
}
