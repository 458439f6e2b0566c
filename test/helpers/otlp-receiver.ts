import { createServer, type IncomingMessage } from 'node:http'
import { createRequire } from 'node:module'
import type { TestContext } from 'node:test'
import { onCleanup } from './cleanup.js'

// The official OTLP protobuf definitions, compiled by protobufjs: the generated root of
// @opentelemetry/otlp-transformer 0.52 (installed as `otlp-proto`; later versions of that package
// encode by hand and ship no decoder).
const require = createRequire(import.meta.url)
const { opentelemetry } = require('otlp-proto/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: { decode: (b: Uint8Array) => unknown, toObject: (m: unknown, o: object) => unknown } } } } } }
}
const ExportTraceServiceRequest = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest

type Value = string | number | boolean
export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  attributes: Record<string, Value>
  resource: Record<string, Value>
  status: { code: number, message?: string }
  events: Array<{ name: string, attributes: Record<string, Value> }>
}

export interface ExportRequest {
  path: string
  contentType: string
  headers: IncomingMessage['headers']
  /** The raw body, to search for anything that must never be exported. */
  body: Buffer
}

interface AnyValue { stringValue?: string, intValue?: string | number, boolValue?: boolean, doubleValue?: number }
interface KeyValue { key: string, value: AnyValue }
type Id = string | Uint8Array
interface OtlpSpan { traceId: Id, spanId: Id, parentSpanId?: Id, name: string, kind: number, attributes?: KeyValue[], status?: { code?: number, message?: string }, events?: Array<{ name: string, attributes?: KeyValue[] }> }
interface OtlpRequest { resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }, scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> }

function attributes (kvs: KeyValue[] | undefined): Record<string, Value> {
  const out: Record<string, Value> = {}
  for (const { key, value } of kvs ?? []) {
    out[key] = value.stringValue ?? value.boolValue ?? value.doubleValue ?? (value.intValue === undefined ? '' : Number(value.intValue))
  }
  return out
}

/** An id as lowercase hex: JSON sends hex already, protobuf bytes. */
const hex = (id: Id): string => typeof id === 'string' ? id : Buffer.from(id).toString('hex')

/** Decodes an OTLP/HTTP export body, protobuf or JSON. */
function decode (contentType: string, body: Buffer): OtlpRequest {
  if (contentType.startsWith('application/json')) return JSON.parse(body.toString('utf8')) as OtlpRequest
  if (contentType.startsWith('application/x-protobuf')) {
    const m = ExportTraceServiceRequest.decode(body)
    return ExportTraceServiceRequest.toObject(m, { longs: String, enums: Number, defaults: false }) as OtlpRequest
  }
  throw new Error(`unexpected content-type ${contentType}`)
}

/**
 * A real OTLP/HTTP trace receiver on a free loopback port: it answers every export with 200,
 * decodes both encodings with the official definitions, and keeps the spans and the raw requests.
 */
export async function startOtlpReceiver (t: TestContext): Promise<{ url: string, spans: ReceivedSpan[], requests: ExportRequest[], waitFor: (pred: (spans: ReceivedSpan[]) => boolean, ms?: number) => Promise<void> }> {
  const spans: ReceivedSpan[] = []
  const requests: ExportRequest[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const contentType = req.headers['content-type'] ?? ''
      requests.push({ path: req.url ?? '', contentType, headers: req.headers, body })
      if (req.url === '/v1/traces') {
        for (const rs of decode(contentType, body).resourceSpans ?? []) {
          const resource = attributes(rs.resource?.attributes)
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: hex(s.traceId),
                spanId: hex(s.spanId),
                parentSpanId: hex(s.parentSpanId ?? ''),
                name: s.name,
                kind: s.kind,
                attributes: attributes(s.attributes),
                resource,
                status: { code: s.status?.code ?? 0, message: s.status?.message },
                events: (s.events ?? []).map(e => ({ name: e.name, attributes: attributes(e.attributes) }))
              })
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': contentType.startsWith('application/json') ? 'application/json' : 'application/x-protobuf' })
      res.end(contentType.startsWith('application/json') ? '{}' : '')
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onCleanup(t, async () => { await new Promise(resolve => server.close(resolve)) })
  const { port } = server.address() as { port: number }
  const waitFor = async (pred: (s: ReceivedSpan[]) => boolean, ms = 20_000): Promise<void> => {
    for (const end = Date.now() + ms; !pred(spans);) {
      if (Date.now() > end) throw new Error(`the receiver did not get the expected spans within ${ms} ms; it has: ${JSON.stringify(spans.map(s => s.name))}`)
      await new Promise(resolve => setTimeout(resolve, 50))
    }
  }
  return { url: `http://127.0.0.1:${port}`, spans, requests, waitFor }
}
