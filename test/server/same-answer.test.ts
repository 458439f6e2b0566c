import { describe, it } from 'node:test'
import { EXERCISE_ENV, exercise, generated, inProcessPair, seed } from '../helpers/same-answer.js'

/*
 * CORS changes how a request is answered by its Access-Control headers alone: the same status,
 * headers, body, access line and metrics with CORS on (an origin allowed) as with it off.
 */
const CORS_ON = { env: { CORS_ORIGINS: 'https://elsewhere.example,https://app.example' } }

describe('CORS on answers as CORS off (in process, over HTTP)', () => {
  it('gives the same status, headers, body, access line and metrics for reads, misses, 304s, bad queries, bad keys and limits', async (t) => {
    const s = await seed(t)
    await exercise(await inProcessPair(t, s, [CORS_ON, {}], EXERCISE_ENV), s)
  })

  it('answers every generated read, query and conditional header the same', async (t) => {
    const s = await seed(t)
    await generated(await inProcessPair(t, s, [CORS_ON, {}]), s)
  })
})
