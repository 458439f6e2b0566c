/*
 * The Error of a body that breaks many rules, or names a field at length, sent by the compiled
 * server over HTTP: its `details` keep within the document's own schema (maxItems, maxLength of
 * `field`), and what is cut is said, not dropped without a word.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { tempDir } from '../helpers/app.js'
import { checkResponse } from '../helpers/conformance.js'
import { runCli, startServer } from '../helpers/process.js'

interface ErrorBody { code: string, message: string, status: number, details?: Array<{ field: string, message: string }> }

describe('validation_failed details from the compiled server (black box)', () => {
  it('lists at most 100 fields, cuts a field name to 200 characters with …, says what it left out, and stores nothing', async (t) => {
    const env = { DATABASE_URL: `sqlite:${join(tempDir(t), 'petstore.db')}`, METRICS_PORT: 'off' }
    const server = await startServer(t, env)
    const made = await runCli(['keys', 'create', '--name', 'details'], env)
    assert.equal(made.code, 0, made.stderr)
    const auth = { authorization: `Bearer ${made.stdout.trim()}` }

    const post = async (body: Record<string, unknown>): Promise<ErrorBody> => {
      const res = await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const text = await res.text()
      // The committed document's Error schema (maxItems, maxLength included) and every header.
      checkResponse({ method: 'POST', url: '/v1/pets', status: res.status, headers: Object.fromEntries(res.headers), body: text })
      assert.equal(res.status, 400, text)
      const parsed = JSON.parse(text) as ErrorBody
      assert.equal(parsed.code, 'validation_failed', text)
      return parsed
    }
    const valid = { name: 'Rex', categoryId: 1, status: 'available' }
    const unknown = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`extra${i}`, 1]))

    // Exactly 100 broken fields: every one listed, nothing said about more.
    const hundred = await post({ ...valid, ...unknown(100) })
    assert.equal(hundred.details?.length, 100)
    assert.equal(hundred.details.map(d => d.message).join('; '), hundred.message)

    // 101 and 250: the first 100 listed, in the body's order; the message counts the rest.
    for (const [n, tail] of [[101, '; and 1 more field breaks a rule, not listed'], [250, '; and 150 more fields break a rule, not listed']] as const) {
      const body = await post({ ...valid, ...unknown(n) })
      assert.deepEqual(body.details?.map(d => d.field), Array.from({ length: 100 }, (_, i) => `extra${i}`))
      assert.equal(body.message, body.details.map(d => d.message).join('; ') + tail)
    }

    // A name of 300 characters (code points, as maxLength counts them; astral ones too): its first 199 and …, in field and message alike.
    for (const char of ['x', '🐕']) {
      const long = char.repeat(300)
      const body = await post({ ...valid, [long]: 1 })
      const shown = `${char.repeat(199)}…`
      assert.deepEqual(body.details?.map(d => d.field), [shown])
      assert.equal([...body.details[0]!.field].length, 200)
      assert.match(body.message, new RegExp(`^body field '${shown}' is not allowed \\(allowed fields are `))
      assert.ok(!body.message.includes(long), body.message)
    }

    const list = await fetch(`${server.url}/v1/pets`, { headers: auth })
    assert.deepEqual(await list.json(), [])
  })
})
