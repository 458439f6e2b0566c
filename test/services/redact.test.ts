import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { redactUrl } from '../../src/services/redact.js'

describe('redactUrl', () => {
  it('passes URLs without a key or a credential-like parameter through unchanged', () => {
    for (const url of ['/v1/pets', '/v1/pets/500', '/v1/pets?limit=20', '/v1/pets?limit=20&status=sold&cursor=abc_-09', '/v1/pets?status=Keyed']) {
      assert.equal(redactUrl(url), url)
    }
  })

  it('replaces API keys anywhere and the values of credential-like query parameters', () => {
    const key = 'psk_' + 'a'.repeat(43)
    assert.equal(redactUrl(`/v1/pets/${key}`), '/v1/pets/[redacted]')
    assert.equal(redactUrl(`/v1/pets?limit=5&x=${key}`), '/v1/pets?limit=5&x=[redacted]')
    assert.equal(redactUrl('/v1/pets?limit=5&api_key=abc&Token=def&sig=1&passwd=2&authorization=3&client_secret=4'),
      '/v1/pets?limit=5&api_key=[redacted]&Token=[redacted]&sig=[redacted]&passwd=[redacted]&authorization=[redacted]&client_secret=[redacted]')
    // A value that looks like a credential word does not make its parameter one.
    assert.equal(redactUrl('/v1/pets?status=auth&limit=2'), '/v1/pets?status=auth&limit=2')
  })
})
