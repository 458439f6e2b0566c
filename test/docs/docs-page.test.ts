// requires: chromium
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { describe, it } from 'node:test'
import { chromium } from 'playwright-core'
import { createPet } from '../helpers/app.js'
import { startTestServer } from '../helpers/server.js'

const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url)

// Debian's chromium, driven as a person would: the page must work with no network but this server.
describe('/docs', () => {
  it('shows the three operations and the deprecation, and makes a real call with a key', async (t) => {
    const s = await startTestServer(t)
    await createPet(s, { name: 'Docs-Dog', categoryId: 5, status: 'pending' })

    const executablePath = execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim()
    const browser = await chromium.launch({
      executablePath,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
      timeout: 60_000
    })
    t.after(() => browser.close())
    const context = await browser.newContext({ viewport: { width: 1280, height: 2000 } })
    // Everything the page loads must come from this server: any other request is refused and reported.
    const foreign: string[] = []
    await context.route(() => true, async (route) => {
      const url = route.request().url()
      if (url.startsWith(`${s.origin}/`) || url.startsWith('data:')) {
        await route.continue()
      } else {
        foreign.push(url)
        await route.abort()
      }
    })
    const page = await context.newPage()
    page.setDefaultTimeout(30_000)
    mkdirSync(ARTIFACTS, { recursive: true })

    try {
      await page.goto(`${s.origin}/docs`)
      await page.locator('.opblock').first().waitFor()
      const summaries = await page.locator('.opblock-summary').allInnerTexts()
      for (const id of ['listPets', 'createPet', 'getPet']) assert.ok(summaries.some(x => x.includes(id)), `${id} is listed: ${summaries.join(' | ')}`)
      const getPet = page.locator('.opblock', { has: page.locator('.opblock-summary', { hasText: 'getPet' }) })
      assert.match(String(await getPet.getAttribute('class')), /opblock-deprecated/)

      // Authorize with the key, as a user types it.
      await page.locator('.auth-wrapper .authorize').click()
      await page.locator('.modal-ux input').first().fill(s.key)
      await page.locator('.modal-ux .auth-btn-wrapper .authorize').click()
      await page.locator('.modal-ux .btn-done, .modal-ux .close-modal').first().click()

      // Run listPets for real (try-it-out is on) and read the answer on the page.
      const listPets = page.locator('.opblock', { has: page.locator('.opblock-summary', { hasText: 'listPets' }) })
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
})
