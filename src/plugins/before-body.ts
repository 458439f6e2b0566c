import type { IncomingMessage, ServerResponse } from 'node:http'
import { errorCodes, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ApiError } from '../errors.js'
import { listedCodings } from '../http/content-coding.js'
import { charsetProblem } from '../http/media-types.js'
import { toApiError } from './errors.js'

/** Methods whose body Fastify reads (the others' bodies are never parsed). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'QUERY'])

/** What a request's Expect asks: `100 Continue` before its client sends the body (Node did not send it), or what is not met. */
const expectations = new WeakMap<IncomingMessage, 'continue' | 'unmet'>()

/** The parts of a request its head holds, in the order Fastify validates them (the body comes between params and querystring). */
const HEAD_PARTS = [['params', 'params'], ['querystring', 'query'], ['headers', 'headers']] as const

/**
 * What the route would refuse in a request whose head is all it has read: a Content-Type no body
 * parser takes (Fastify's own 415, before it reads the body) or whose charset the JSON parser refuses,
 * and a path, query or header its schemas refuse (with the route's own validation functions, so the
 * Error is the one the request gets without `Expect`). Schema faults come after a body fault
 * without `Expect`; with it the body is never sent, so the head's fault is the answer.
 */
function headProblem (request: FastifyRequest): Error | undefined {
  const type = request.headers['content-type']
  const essence = type?.split(';', 1)[0]!.trim().toLowerCase() ?? ''
  if (essence === '' || !request.server.hasContentTypeParser(essence)) return toApiError(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(type ?? ''))
  const charset = charsetProblem(type ?? '')
  if (charset !== undefined) return charset
  for (const [part, property] of HEAD_PARTS) {
    const validate = request.getValidationFunction(part)
    if (validate === undefined) continue
    // Our validator compiler (schemas/validator.ts) answers { value } or { error }, as Fastify's custom compilers may.
    const result: unknown = validate(request[property])
    if (typeof result === 'object' && result !== null && 'error' in result && result.error instanceof Error) return result.error
  }
  return undefined
}

/**
 * What is decided before a byte of a request body is read, in a preParsing hook registered after the
 * errors plugin's, so after authentication (onRequest) and after the 404/405 answer of an unknown
 * route:
 * - an `Expect` other than `100-continue` → 417 `expectation_failed` (RFC 9110 §10.1.1). Node's own
 *   answer would be a bare 417, before routing and without any of our headers;
 * - a body sent with a content coding (`Content-Encoding: gzip`, `br`, …) → 415
 *   `unsupported_media_type` naming it: bodies are accepted as identity only, so no decompression
 *   bomb can inflate past the body limit, and a gzip body is never parsed as if it were JSON;
 * - a declared `Content-Length` over the body limit → 413, before the client is asked for the body;
 * - for a client that waits for `100 Continue` (`Expect: 100-continue`), whatever else the route
 *   would refuse from the head alone (headProblem): the final 4xx is sent instead, and the body never asked for;
 * - then, and only then, `100 Continue`. Node would send it on arrival, before authentication and
 *   before the size was checked.
 */
async function beforeBody (app: FastifyInstance): Promise<void> {
  // Node emits checkContinue for any Expect that mentions 100-continue (`100-continue, foo` too),
  // checkExpectation for any other; only the expectation 100-continue alone is met.
  const expecting = (req: IncomingMessage, res: ServerResponse): void => {
    expectations.set(req, req.headers.expect?.trim().toLowerCase() === '100-continue' ? 'continue' : 'unmet')
    app.server.emit('request', req, res)
  }
  app.server.on('checkContinue', expecting)
  app.server.on('checkExpectation', expecting)

  app.addHook('preParsing', (request, reply, payload, done) => {
    const problem = refusedFromHead(request, reply)
    if (problem !== undefined) done(problem)
    else done(null, payload)
  })
}

/** The first of the refusals above that the request's head decides, if any; else `100 Continue` when awaited. */
function refusedFromHead (request: FastifyRequest, reply: FastifyReply): Error | undefined {
  const expectation = expectations.get(request.raw)
  if (expectation === 'unmet') return new ApiError('expectation_failed', 'the Expect header can only be 100-continue')
  if (!BODY_METHODS.has(request.method)) return undefined
  // A body is declared by its length or sent chunked.
  const length = request.headers['content-length']
  if (request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) return undefined
  const codings = listedCodings(request.headers['content-encoding']).filter(c => c !== 'identity')
  if (codings.length > 0) {
    return new ApiError('unsupported_media_type', `Content-Encoding ${codings.join(', ')} is not supported; send the body uncompressed (identity)`)
  }
  if (Number(length) > request.routeOptions.bodyLimit) return new ApiError('payload_too_large', 'request body is larger than the body limit')
  if (expectation !== 'continue') return undefined
  const problem = headProblem(request)
  if (problem === undefined) reply.raw.writeContinue()
  return problem
}

export default fp(beforeBody, { name: 'petstore-before-body', dependencies: ['petstore-errors'] })
