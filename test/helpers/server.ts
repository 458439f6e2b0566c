import { freePort } from '../../scripts/lib/local.mjs'
import type { TestContext } from 'node:test'
import { buildTestApp, type TestApp } from './app.js'
import { checkResponse } from './conformance.js'

export { freePort }

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
