import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { renderReferences, staleReferences } from '../../scripts/reference-docs.js'
import { EnvSchema } from '../../src/config/index.js'

describe('generated reference pages', () => {
  it('are what their sources generate (configuration, .env.example, cli, errors, metrics, http-api): npm run docs', async () => {
    assert.deepEqual(staleReferences(await renderReferences()), [])
  })

  it('list every configuration variable at its default in .env.example', async () => {
    const example = (await renderReferences())['.env.example']!
    for (const [name, p] of Object.entries(EnvSchema.properties as Record<string, { default?: unknown }>)) {
      assert.match(example, new RegExp(`^# ${name}=${String(p.default ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'), name)
    }
  })
})
