import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { TestContext } from 'node:test'
import { buildTestApp, type TestApp } from './app.js'
import { checkResponse } from './conformance.js'

/**
 * A loopback port nothing listens on right now, for a server the test starts later (a child process,
 * a container). It is taken below the kernel's ephemeral range: a port the OS hands out (listen on 0,
 * the local end of every outgoing connection) is never one of these, so the parallel tests' own
 * servers and clients cannot take it in the time between this check and the later bind, which for a
 * container started after its dependencies can be a minute.
 */
export async function freePort (): Promise<number> {
  const [low] = ephemeralRange()
  for (let tries = 0; tries < 50; tries++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000))
    if (await canListen(port)) return port
  }
  throw new Error(`no free port found in 10000–${low - 1}`)
}

/** The kernel's range for ports it assigns itself (Linux's default where it cannot be read). */
function ephemeralRange (): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
    if (low !== undefined && high !== undefined && low > 11_000) return [low, high]
  } catch {}
  return [32_768, 60_999]
}

async function canListen (port: number): Promise<boolean> {
  return await new Promise(resolve => {
    const server = createServer()
    server.unref()
    server.on('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

export interface TestServer extends TestApp {
  /** http://127.0.0.1:PORT */
  origin: string
  /** origin + /v1 */
  baseUrl: string
}

/**
 * The real server over HTTP on a free loopback port, configured with that port so the document's
 * servers (and so the /docs page) point at it. Stopped when the test ends.
 */
export async function startTestServer (t: TestContext, opts: { env?: Record<string, string> } = {}): Promise<TestServer> {
  const port = await freePort()
  const ta = await buildTestApp(t, { env: { PORT: String(port), ...opts.env } })
  await ta.app.listen({ host: '127.0.0.1', port })
  const origin = `http://127.0.0.1:${port}`
  return { ...ta, origin, baseUrl: `${origin}/v1` }
}

/** fetch that checks every response against the committed OpenAPI document, like the inject helper. */
export const checkingFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init)
  const url = new URL(input instanceof Request ? input.url : String(input))
  checkResponse({
    method: (init?.method ?? 'GET').toUpperCase(),
    url: url.pathname + url.search,
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body: await res.clone().text()
  })
  return res
}
