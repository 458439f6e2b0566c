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

/**
 * Parses consecutive HTTP/1.1 responses from raw bytes (Content-Length or chunked framing; no body
 * for 1xx, 204 and 304, nor for the answers to HEAD requests, given in order by `heads`).
 * Returns those complete so far; the rest (an incomplete response) is left out.
 */
export function parseResponses (data: Buffer, heads: boolean[] = []): RawResponse[] {
  const out: RawResponse[] = []
  let at = 0
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at)
    if (end === -1) return out
    const top = data.subarray(at, end).toString('latin1')
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(top)
    if (m === null) return out
    const status = Number(m[1])
    const headers: Record<string, string> = {}
    for (const line of top.split('\r\n').slice(1)) {
      const i = line.indexOf(':')
      const name = line.slice(0, i).toLowerCase()
      const value = line.slice(i + 1).trim()
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value
    }
    let bodyStart = end + 4
    let body: Buffer = Buffer.alloc(0)
    const interim = status < 200
    const isHead = !interim && heads[out.filter(r => r.status >= 200).length] === true
    if (!interim && !isHead && status !== 204 && status !== 304) {
      if (headers['content-length'] !== undefined) {
        const len = Number(headers['content-length'])
        if (data.length < bodyStart + len) return out
        body = data.subarray(bodyStart, bodyStart + len)
        bodyStart += len
      } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
        const parts: Buffer[] = []
        for (;;) {
          const lineEnd = data.indexOf('\r\n', bodyStart)
          if (lineEnd === -1) return out
          const size = parseInt(data.subarray(bodyStart, lineEnd).toString('latin1'), 16)
          if (data.length < lineEnd + 2 + size + 2) return out
          parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size))
          bodyStart = lineEnd + 2 + size + 2
          if (size === 0) break
        }
        body = Buffer.concat(parts)
      } else {
        // Delimited by the end of the connection.
        body = data.subarray(bodyStart)
        bodyStart = data.length
      }
    }
    out.push({ status, headers, body: body.toString('utf8'), raw: data.subarray(at, bodyStart).toString('utf8') })
    at = bodyStart
  }
}

/**
 * Writes raw bytes on a fresh connection (all in one write unless given as several parts, sent
 * `gapMs` apart) and reads every response until the server closes the connection, or until `count`
 * final responses arrived (then the connection is dropped). 1xx interim responses are included.
 */
export function rawExchange (port: number, data: string | Buffer | Array<string | Buffer>, opts: { count?: number, timeoutMs?: number, gapMs?: number } = {}): Promise<{ responses: RawResponse[], closed: boolean, raw: string }> {
  const parts = Array.isArray(data) ? data : [data]
  const text = parts.map(p => typeof p === 'string' ? p : p.toString('latin1')).join('')
  // Which requests are HEAD, in order (requests start at a line beginning with a method name).
  const heads = [...text.matchAll(/(?:^|\r\n\r\n)([A-Z-]+) \S+ HTTP\//g)].map(m => m[1] === 'HEAD')
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let buf = Buffer.alloc(0)
    let settled = false
    const finish = (closed: boolean) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ responses: parseResponses(buf, heads), closed, raw: buf.toString('utf8') })
    }
    const timer = setTimeout(() => {
      settled = true
      socket.destroy()
      reject(new Error(`no end within ${opts.timeoutMs ?? 10000} ms; got ${JSON.stringify(buf.toString('latin1').slice(0, 400))}`))
    }, opts.timeoutMs ?? 10000)
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      if (opts.count !== undefined && parseResponses(buf, heads).filter(r => r.status >= 200).length >= opts.count) finish(false)
    })
    socket.on('error', () => { /* a reset after the responses is reported as a close */ })
    socket.on('close', () => finish(true))
    const send = (i: number) => {
      if (i >= parts.length || socket.destroyed) return
      socket.write(parts[i]!)
      if (i + 1 < parts.length) setTimeout(() => send(i + 1), opts.gapMs ?? 50)
    }
    send(0)
  })
}
