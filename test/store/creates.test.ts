import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createOutcomes, idempotencyKeys, keyOf, planCreates } from '../../src/store/creates.js'
import type { IdemRecord } from '../../src/store/rows.js'
import type { IdempotencyKey } from '../../src/store/store.js'

const now = new Date('2030-01-02T00:00:00Z')
const expiredBefore = new Date('2030-01-01T00:00:00Z')
const pet = (name: string) => ({ name, categoryId: 1n, status: 'available' as const })
const idem = (key: string, fingerprint: string): IdempotencyKey => ({ apiKeyId: 1, key, fingerprint, now, expiredBefore })
const record = (fingerprint: string, createdAt: Date): IdemRecord => ({ fingerprint, createdAt, pet: { id: 7n, ...pet('old') } })

/** A batch's plan and outcomes, as a store runs them: ids 100, 101… in the order of the plan's pets. */
describe('planCreates', () => {
  it('inserts items without a key in order, and answers their ids', () => {
    const plan = planCreates([{ pet: pet('a') }, { pet: pet('b') }], new Map())
    assert.deepEqual(plan.pets.map(p => p.name), ['a', 'b'])
    assert.deepEqual([plan.drop, plan.record], [[], []])
    assert.deepEqual(createOutcomes(plan, [100n, 101n]), [100n, 101n])
  })

  it('replays a live record for the same body, refuses it for another, writing nothing for either', () => {
    const items = [{ pet: pet('a'), idem: idem('k', 'f') }, { pet: pet('b'), idem: idem('k', 'other') }]
    assert.deepEqual(idempotencyKeys(items).map(k => k.key), ['k'])
    const plan = planCreates(items, new Map([[keyOf(items[0]!.idem), record('f', expiredBefore)]]))
    assert.deepEqual([plan.pets, plan.drop, plan.record], [[], [], []])
    assert.deepEqual(createOutcomes(plan, []), [{ id: 7n, ...pet('old') }, null])
  })

  it('replaces an expired record: drops it, inserts, records the key again', () => {
    const items = [{ pet: pet('a'), idem: idem('k', 'f') }]
    const plan = planCreates(items, new Map([[keyOf(items[0]!.idem), record('f', new Date(expiredBefore.getTime() - 1))]]))
    assert.deepEqual(plan.drop.map(k => k.key), ['k'])
    assert.deepEqual(plan.record.map(r => [r.idem.key, r.pet]), [['k', 0]])
    assert.deepEqual(createOutcomes(plan, [100n]), [100n])
  })

  it('treats two items with one key in a batch as two requests in a row', () => {
    const items = [
      { pet: pet('a'), idem: idem('k', 'f') },
      { pet: pet('x') },
      { pet: pet('a'), idem: idem('k', 'f') },
      { pet: pet('b'), idem: idem('k', 'other') }
    ]
    const plan = planCreates(items, new Map())
    assert.deepEqual(plan.pets.map(p => p.name), ['a', 'x'])
    assert.deepEqual(plan.record.map(r => [r.idem.key, r.pet]), [['k', 0]])
    assert.deepEqual(createOutcomes(plan, [100n, 101n]), [100n, 101n, { id: 100n, ...pet('a') }, null])
  })

  it('keeps keys of different API keys apart', () => {
    const items = [{ pet: pet('a'), idem: idem('k', 'f') }, { pet: pet('b'), idem: { ...idem('k', 'g'), apiKeyId: 2 } }]
    assert.equal(idempotencyKeys(items).length, 2)
    assert.deepEqual(createOutcomes(planCreates(items, new Map()), [100n, 101n]), [100n, 101n])
  })
})
