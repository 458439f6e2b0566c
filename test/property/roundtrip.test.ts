import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { STORES, buildTestApp } from '../helpers/app.js'
import { fcParams, newPet, newPetBody, parseExact, walkAll } from '../helpers/property.js'

const RUNS = Number(process.env.FC_RUNS ?? 150)

for (const store of STORES) {
  describe(`property: valid NewPets round-trip exactly [${store}]`, () => {
    it('through createPet, getPet and listPets, for any Unicode name and any int64 categoryId', async (t) => {
      const ta = await buildTestApp(t, { store })
      const json = { ...ta.auth, 'content-type': 'application/json' }
      let checked = 0
      await fc.assert(fc.asyncProperty(newPet.chain(p => fc.tuple(fc.constant(p), newPetBody(p))), async ([pet, body]) => {
        const expected = { name: pet.name, categoryId: pet.categoryId, status: pet.status ?? 'available' }
        const created = await ta.app.inject({ method: 'POST', url: '/v1/pets', headers: json, payload: body })
        assert.equal(created.statusCode, 201, created.body)
        const got = parseExact(created.body) as { id: bigint }
        assert.deepEqual(got, { id: got.id, ...expected })
        assert.equal(created.headers.location, `/v1/pets/${got.id}`)

        const one = await ta.app.inject({ url: `/v1/pets/${got.id}`, headers: ta.auth })
        assert.equal(one.statusCode, 200)
        assert.deepEqual(parseExact(one.body), { id: got.id, ...expected })

        // The new pet has the highest id: it is the last one of a full walk, and of its status's walk.
        for (const query of ['limit=100', `limit=100&status=${expected.status}`]) {
          const all = await walkAll(ta.app, ta.auth, query)
          assert.deepEqual(all.at(-1), { id: got.id, ...expected })
        }
        checked++
      }), fcParams(RUNS))
      t.diagnostic(`${checked} random pets round-tripped through create, get and list`)
    })
  })
}
