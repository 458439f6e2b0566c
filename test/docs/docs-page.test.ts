// requires: chromium
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { describe, it, type TestContext } from 'node:test'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { createPet } from '../helpers/app.js'
import { startTestServer } from '../helpers/server.js'
import { onCleanup } from '../helpers/cleanup.js'

const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url)

/**
 * Debian's chromium, driven as a person would. `hostName` is resolved to the loopback server by the
 * browser itself, as a reader behind any DNS name or proxy would reach it. Everything the page loads
 * must come from `origin`: any other request is refused and reported in `foreign`.
 */
async function openBrowser (t: TestContext, origin: string, hostName?: string): Promise<{ context: BrowserContext, page: Page, foreign: string[] }> {
  const executablePath = execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim()
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
      ...(hostName === undefined ? [] : [`--host-resolver-rules=MAP ${hostName} 127.0.0.1`])
    ],
    timeout: 60_000
  })
  onCleanup(t, () => browser.close())
  const context = await browser.newContext({ viewport: { width: 1280, height: 2000 } })
  const foreign: string[] = []
  await context.route(() => true, async (route) => {
    const url = route.request().url()
    if (url.startsWith(`${origin}/`) || url.startsWith('data:')) {
      await route.continue()
    } else {
      foreign.push(url)
      await route.abort()
    }
  })
  const page = await context.newPage()
  page.setDefaultTimeout(30_000)
  mkdirSync(ARTIFACTS, { recursive: true })
  return { context, page, foreign }
}

async function authorize (page: Page, key: string): Promise<void> {
  await page.locator('.auth-wrapper .authorize').click()
  await page.locator('.modal-ux input').first().fill(key)
  await page.locator('.modal-ux .auth-btn-wrapper .authorize').click()
  await page.locator('.modal-ux .btn-done, .modal-ux .close-modal').first().click()
}

function operation (page: Page, operationId: string) {
  return page.locator('.opblock', { has: page.locator('.opblock-summary', { hasText: operationId }) })
}

describe('/docs', () => {
  it('shows the three operations and the deprecation, and makes a real call with a key', async (t) => {
    const s = await startTestServer(t)
    await createPet(s, { name: 'Docs-Dog', categoryId: 5, status: 'pending' })
    const { page, foreign } = await openBrowser(t, s.origin)

    try {
      await page.goto(`${s.origin}/docs`)
      await page.locator('.opblock').first().waitFor()
      const summaries = await page.locator('.opblock-summary').allInnerTexts()
      for (const id of ['listPets', 'createPet', 'getPet']) assert.ok(summaries.some(x => x.includes(id)), `${id} is listed: ${summaries.join(' | ')}`)
      assert.match(String(await operation(page, 'getPet').getAttribute('class')), /opblock-deprecated/)

      await authorize(page, s.key)
      // Run listPets for real (try-it-out is on) and read the answer on the page.
      const listPets = operation(page, 'listPets')
      await listPets.locator('.opblock-summary').click()
      await listPets.locator('.execute').click()
      const live = listPets.locator('.live-responses-table')
      await live.getByText('Docs-Dog').first().waitFor()
      assert.equal((await live.locator('tbody .response-col_status').first().innerText()).trim(), '200')
      assert.match(await live.innerText(), /"status": "pending"/)
      assert.match(await listPets.locator('.curl-command, .curl').first().innerText(), /Authorization: Bearer psk_/)
    } finally {
      // What the page showed last, kept as the test's artifact whether it passed or not.
      await page.screenshot({ path: new URL('docs-page.png', ARTIFACTS).pathname, fullPage: true })
    }
    assert.deepEqual(foreign, [], 'the page asked for nothing outside this server')
  })

  it('keeps an expanded operation about two screens long at 1280 px: its own answers first, the shared ones a line each, code samples folded, /openapi.json linked', async (t) => {
    const s = await startTestServer(t)
    const { page } = await openBrowser(t, s.origin)
    await page.setViewportSize({ width: 1280, height: 1000 })
    try {
      await page.goto(`${s.origin}/docs`)
      await page.locator('.opblock').first().waitFor()
      const info = await page.locator('.information-container').boundingBox()
      assert.ok(info !== null && info.height < 400, `the API description is short (${info?.height} px)`)
      assert.match(await page.locator('.information-container').innerText(), /Every answer carries/)
      // The document, linked under the title at the address it is published at.
      const link = page.locator('.information-container .info a', { hasText: '/openapi.json' })
      assert.equal(await link.getAttribute('href'), '/openapi.json')
      const linked = await fetch(`${s.origin}/openapi.json`)
      assert.equal(linked.status, 200)
      assert.equal(((await linked.json()) as { info: { title: string } }).info.title, 'Petstore')

      const heights: Record<string, number> = {}
      for (const id of ['listPets', 'createPet', 'getPet']) {
        const op = operation(page, id)
        await op.locator('.opblock-summary').click()
        await op.locator('.responses-wrapper').waitFor()
        await op.locator('tr.petstore-shared').first().waitFor()
        heights[id] = Math.round((await op.boundingBox())?.height ?? Infinity)
        await op.screenshot({ path: new URL(`docs-page-${id}.png`, ARTIFACTS).pathname })
        const codes = await op.locator('.responses-table > tbody > tr.response').evaluateAll(rows => rows.map(r => [r.getAttribute('data-code'), r.classList.contains('petstore-shared')]))
        // The operation's own answers (inline in the document) first, then the shared ones ($ref), each in a line.
        const firstShared = codes.findIndex(([, shared]) => shared === true)
        assert.ok(firstShared > 0 && codes.slice(firstShared).every(([, shared]) => shared === true), `${id}: ${JSON.stringify(codes)}`)
        for (const [code, shared] of codes) assert.equal(shared, ['401', '403', '408', '413', '414', '415', '417', '429', '431', '500', '501', '503', '505'].includes(String(code)), `${id} ${code}`)
        const unauthorized = op.locator('tr.petstore-shared[data-code="401"]')
        assert.match(await unauthorized.innerText(), /`?unauthorized`?[\s\S]*Headers: X-Request-Id, WWW-Authenticate/)
        assert.ok(((await unauthorized.boundingBox())?.height ?? Infinity) < 60, 'a shared answer takes a line')
        // Code samples, folded: curl, the TypeScript client, fetch.
        assert.equal((await op.locator('.petstore-samples summary').innerText()).trim(), 'Code samples: curl · TypeScript client · fetch')
        if (id === 'createPet') assert.match(await op.locator('textarea.body-param__text').inputValue(), /"name": "Rex"/)
        if (id === 'getPet') {
          // One click shows a shared answer in full, with its header table.
          await unauthorized.locator('.petstore-shared-open').click()
          const full = op.locator('tr.response[data-code="401"]')
          await full.locator('.headers-wrapper').waitFor()
          assert.match(await full.innerText(), /WWW-Authenticate/)
          // An own answer's table keeps the operation's own headers; those every answer carries are named under it.
          const ok = op.locator('tr.response[data-code="200"]')
          assert.deepEqual(await ok.locator('.headers-wrapper tbody td:first-child').allInnerTexts(), ['ETag', 'Cache-Control', 'Content-Encoding', 'Vary'])
          assert.match(await ok.locator('.petstore-common-headers').innerText(), /^Also: X-Request-Id, Deprecation, Sunset, Link, RateLimit, RateLimit-Policy/)
          await op.locator('.petstore-samples summary').click()
          assert.match(await op.locator('.petstore-samples').innerText(), /curl -sS 'http:\/\/127\.0\.0\.1:8080\/v1\/pets\/1'/)
        }
        await op.locator('.opblock-summary').click()
      }
      // About two screens of 1000 px, at 1280 px wide, with a line for each of the 13 shared answers.
      for (const id of ['listPets', 'createPet', 'getPet']) assert.ok(heights[id]! <= 2100, `${id} expanded is ${heights[id]} px tall`)
      t.diagnostic(`expanded heights at 1280 px: ${JSON.stringify(heights)}`)
    } finally {
      await page.screenshot({ path: new URL('docs-page-reading.png', ARTIFACTS).pathname, fullPage: true })
    }
  })

  it('behind another host name with HOST=0.0.0.0: own title, servers named for readers, same-origin calls, int64 shown exactly', async (t) => {
    // HOST=0.0.0.0 and no PUBLIC_BASE_URL, the container default: no loopback address may leak into the page.
    const s = await startTestServer(t, { env: { HOST: '0.0.0.0' } })
    const beyond = 2n ** 53n + 1n // 9007199254740993: JSON.parse makes it …992
    const created = await fetch(`${s.baseUrl}/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
      body: `{"name":"Big-Cat","categoryId":${beyond},"status":"sold"}`
    })
    assert.equal(created.status, 201)
    const host = 'docs.petstore.test'
    const origin = `http://${host}:${new URL(s.origin).port}`
    const { page, foreign } = await openBrowser(t, origin, host)
    const cspViolations: string[] = []
    page.on('console', m => { if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text()) })

    try {
      const res = await page.goto(`${origin}/docs`)
      assert.match(String(res?.headers()['content-security-policy']), / connect-src 'self';$/)
      await page.locator('.opblock').first().waitFor()
      assert.equal(await page.title(), 'Petstore API reference')
      assert.equal(await page.locator('link[rel="icon"]').getAttribute('href'), '/docs/static/theme/petstore.svg')
      assert.equal(await page.locator('.topbar').count(), 0, 'no top bar carrying a third-party logo')
      assert.doesNotMatch(await page.locator('body').innerText(), /swagger|fastify/i)
      const servers = await page.locator('.servers select option').allInnerTexts()
      assert.deepEqual(servers.map(x => x.trim()), ['/v1 - This server (where this document was fetched from)'])

      await authorize(page, s.key)
      const listPets = operation(page, 'listPets')
      await listPets.locator('.opblock-summary').click()
      await listPets.locator('.execute').click()
      const listed = listPets.locator('.live-responses-table')
      await listed.getByText('Big-Cat').first().waitFor()
      const listText = await listed.innerText()
      assert.match(listText, /"categoryId": 9007199254740993\b/)
      assert.doesNotMatch(listText, /9007199254740992/)
      assert.match(await listPets.locator('.request-url').first().innerText(), new RegExp(`\\n${origin.replace(/\./g, '\\.')}/v1/pets\\?limit=20$`), 'the call went to the host name the reader used')

      // The health checks' server is the relative "/": the call goes to /healthz of the same origin.
      const liveness = operation(page, 'liveness')
      await liveness.locator('.opblock-summary').click()
      await liveness.locator('.execute').click()
      await liveness.locator('.live-responses-table tbody .response-col_status').first().waitFor()
      assert.equal((await liveness.locator('.live-responses-table tbody .response-col_status').first().innerText()).trim(), '200')
      assert.match(await liveness.locator('.request-url').first().innerText(), new RegExp(`\\n${origin.replace(/\./g, '\\.')}/healthz$`))

      // Create through the page: the typed body goes out as typed, the 201 comes back exact.
      const createPetOp = operation(page, 'createPet')
      await createPetOp.locator('.opblock-summary').click()
      await createPetOp.locator('.body-param__text').fill('{\n  "name": "Huge-Hamster",\n  "categoryId": 9223372036854775807,\n  "status": "available"\n}')
      await createPetOp.locator('.execute').click()
      const made = createPetOp.locator('.live-responses-table')
      await made.getByText('Huge-Hamster').first().waitFor()
      assert.equal((await made.locator('tbody .response-col_status').first().innerText()).trim(), '201')
      assert.match(await made.innerText(), /"categoryId": 9223372036854775807\b/)
    } finally {
      await page.screenshot({ path: new URL('docs-page-int64.png', ARTIFACTS).pathname, fullPage: true })
    }
    assert.deepEqual(foreign, [], 'the page asked for nothing outside this server')
    assert.deepEqual(cspViolations, [])
    // What the page showed is what the store holds.
    const list = await (await fetch(`${s.baseUrl}/pets`, { headers: { authorization: `Bearer ${s.key}` } })).text()
    assert.match(list, /"categoryId":9223372036854775807\b/)
  })
})
