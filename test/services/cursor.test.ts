import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { CursorCodec } from '../../src/services/cursor.js'

describe('CursorCodec', () => {
  it('round-trips, and a cursor already verified is still refused for another status filter', () => {
    const codec = new CursorCodec(randomBytes(32))
    const c = codec.encode(41n, 'sold')
    assert.equal(codec.encode(41n, 'sold'), c)
    assert.equal(codec.decode(c, 'sold'), 41n)
    assert.equal(codec.decode(c, 'sold'), 41n)
    assert.equal(codec.decode(c, undefined), undefined)
    assert.equal(codec.decode(c, 'pending'), undefined)
    assert.notEqual(codec.encode(41n, undefined), c)
  })

  it('refuses a cursor signed with another key, even after verifying the genuine one', () => {
    const a = new CursorCodec(randomBytes(32))
    const b = new CursorCodec(randomBytes(32))
    const genuine = a.encode(7n, undefined)
    assert.equal(a.decode(genuine, undefined), 7n)
    assert.equal(b.decode(genuine, undefined), undefined)
    const forged = b.encode(7n, undefined)
    assert.equal(a.decode(forged, undefined), undefined)
    assert.equal(a.decode(forged, undefined), undefined)
  })

  it('accepts only the canonical spelling: the unused bits of the last character must be zero', () => {
    const codec = new CursorCodec(randomBytes(32))
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    for (const [id, status] of [[1n, undefined], [2n ** 62n, 'sold'], [-5n, 'pending']] as const) {
      const cursor = codec.encode(id, status)
      assert.equal(codec.decode(cursor, status), id)
      const last = alphabet.indexOf(cursor.at(-1)!)
      let others = 0
      for (let low = 0; low < 16; low++) {
        const spelling = cursor.slice(0, -1) + alphabet[(last & ~15) | low]
        if (spelling === cursor) continue
        // Same bytes once decoded: only the spelling differs.
        assert.deepEqual(Buffer.from(spelling, 'base64url'), Buffer.from(cursor, 'base64url'))
        assert.equal(codec.decode(spelling, status), undefined, spelling)
        others++
      }
      assert.equal(others, 15)
    }
  })
})
