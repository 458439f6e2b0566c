// A local OTLP/HTTP trace receiver for the bench's "tracing on" rows: it reads every export to its
// end and answers 200 with an empty body, so the service pays for making and exporting its spans
// and nothing waits on a collector. Counts the exports it received, to show the spans went out.
import { createServer } from 'node:http'

/** @returns {Promise<{ url: string, exports: () => number, close: () => Promise<void> }>} */
export async function startOtlpSink () {
  let exports = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      if (req.method === 'POST') exports++
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' })
      res.end()
    })
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  return {
    url: `http://127.0.0.1:${port}`,
    exports: () => exports,
    close: () => new Promise(resolve => { server.closeAllConnections(); server.close(() => resolve(undefined)) })
  }
}

/** The service's environment for each feature row: CORS on (an origin allowed), tracing on (to `sinkUrl`). */
export function featureEnvs (sinkUrl) {
  return {
    'CORS on': { CORS_ORIGINS: 'https://app.example' },
    'tracing on': { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }
  }
}

/** Added to tracing on: one root request in ten traced (what an operator who samples runs). */
export const SAMPLED_10 = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }
