import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config/index.js'
import { startTracing } from '../../src/observability/tracing.js'
import { onCleanup } from '../helpers/cleanup.js'
import { startOtlpReceiver } from '../helpers/otlp-receiver.js'
import { EXERCISE_ENV, exercise, inProcessPair, seed } from '../helpers/same-answer.js'

/*
 * Tracing changes how a request is answered by nothing but the spans it exports and the span's ids
 * on its log lines: the same status, headers, body, access line and metrics with tracing on (to a
 * local OTLP receiver) as with it off. In a process of its own (a file of its own): the SDK is global.
 */
describe('tracing on answers as tracing off (in process, over HTTP)', () => {
  it('gives the same status, headers, body, access line and metrics, and exports a server span per request', async (t) => {
    const receiver = await startOtlpReceiver(t)
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' }
    // The SDK reads the OTEL_* variables from the environment itself.
    Object.assign(process.env, env)
    const tracing = await startTracing(loadConfig({ DATABASE_URL: 'sqlite::memory:', ...env }))
    assert.ok(tracing !== undefined, 'tracing is on')
    onCleanup(t, () => tracing.shutdown())
    const s = await seed(t)
    const pair = await inProcessPair(t, s, [{ env, tracing }, {}], EXERCISE_ENV)
    await exercise(pair, s)
    await receiver.waitFor(spans => spans.filter(span => span.name === 'GET /v1/pets/:petId' && span.kind === 2).length >= 3)
    const withIds = pair.logs[0].join('').split('\n').filter(l => l.includes('"msg":"request completed"') && l.includes('"trace_id"'))
    assert.ok(withIds.length > 100, `${withIds.length} access lines carry the span's ids`)
  })
})
