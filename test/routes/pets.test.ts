import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp, createPet } from '../helpers/app.js'
import type { Response as LightMyRequestResponse } from 'light-my-request'

describe('POST /v1/pets', () => {
  it('answers 201 with the pet, its id and Location, status defaulting to available', async (t) => {
    const ta = await buildTestApp(t)
    const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth, payload: { name: 'Rex', categoryId: 7 } })
    assert.equal(res.statusCode, 201)
    const pet = res.json()
    assert.deepEqual(pet, { id: pet.id, name: 'Rex', categoryId: 7, status: 'available' })
    assert.equal(res.headers.location, `/v1/pets/${pet.id}`)
  })

  it('keeps a categoryId past 2^53 exact, digit for digit', async (t) => {
    const ta = await buildTestApp(t)
    const res = await ta.app.inject({
      method: 'POST', url: '/v1/pets', headers: { ...ta.auth, 'content-type': 'application/json' },
      payload: '{"name":"Big","categoryId":9223372036854775807}'
    })
    assert.equal(res.statusCode, 201)
    assert.match(res.body, /"categoryId":9223372036854775807[,}]/)
    const id = /"id":(\d+)/.exec(res.body)![1]
    const got = await ta.app.inject({ url: `/v1/pets/${id}`, headers: ta.auth })
    assert.match(got.body, /"categoryId":9223372036854775807[,}]/)
  })

  it('returns 400 validation_failed naming a client-sent id', async (t) => {
    const ta = await buildTestApp(t)
    const res = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: ta.auth, payload: { id: 5, name: 'Rex', categoryId: 7 } })
    assert.equal(res.statusCode, 400)
    assert.deepEqual(res.json(), { code: 'validation_failed', message: "body field 'id' is assigned by the service and must not be sent", status: 400 })
    const list = await ta.app.inject({ url: '/v1/pets', headers: ta.auth })
    assert.deepEqual(list.json(), [])
  })
})

describe('GET /v1/pets', () => {
  it('walks every pet exactly once through Link rel="next"', async (t) => {
    const ta = await buildTestApp(t)
    const made: number[] = []
    for (let i = 0; i < 7; i++) made.push((await createPet(ta, { name: `p${i}`, categoryId: i })).id)
    const seen: number[] = []
    let url: string | undefined = '/v1/pets?limit=3'
    while (url !== undefined) {
      const res: LightMyRequestResponse = await ta.app.inject({ url, headers: ta.auth })
      assert.equal(res.statusCode, 200)
      seen.push(...res.json().map((p: { id: number }) => p.id))
      url = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ''))?.[1]
    }
    assert.deepEqual(seen, made)
  })
})
