/*
 * The one body parser: application/json in UTF-8. secure-json-parse parses (the __proto__ and
 * constructor.prototype guard of Fastify's own parser); lossless-json parses again when a number may
 * not survive a double, so an int64 keeps every digit. Three parts stay our own, each because a test
 * fails with the libraries alone:
 * - exactNumber: lossless-json's parseNumberAndBigInt reads 9007199254740993.5 as the integer
 *   9007199254740994 and 12345678.000000001 as 12345678, which the schema would accept changed
 *   (test/routes/pets.test.ts, "past 2^53 with a fraction", "a fraction a double rounds to an integer");
 * - the nesting bound: neither library has one, and lossless-json recurses per level, so a body
 *   200,000 arrays deep around a long integer overflows the stack and would be answered "not valid
 *   JSON" (test/edges/small.test.ts);
 * - the charset check: Fastify picks this parser by media type alone; its parameter parser keeps the
 *   last of two charsets (the content-type package the first), and two must be refused with 415
 *   (test/edges/repeated-headers.test.ts).
 */
import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { parse as parseLossless, splitNumber } from 'lossless-json'
import sjson from 'secure-json-parse'
import { ApiError } from '../errors.js'
import { charsetProblem } from './media-types.js'

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)

/**
 * A JSON number by its exact value, as JSON Schema judges it (`1e3` is an integer): int64 keeps all its
 * bits as BigInt; a fraction no double tells from an integer becomes NaN, so no integer rule accepts it.
 */
function exactNumber (text: string): number | bigint {
  // digits: the significant ones (zero is '0'); the value is d.ddd × 10^exponent.
  const { sign, digits, exponent } = splitNumber(text)
  const scale = exponent - (digits.length - 1)
  if (scale < 0) {
    const n = Number(text)
    return Number.isInteger(n) ? NaN : n
  }
  // Past 20 digits an integer is beyond any 64-bit range; its exact size no longer matters.
  if (digits.length + scale > 20) return BigInt(`${sign}1${'0'.repeat(20)}`)
  const value = BigInt(`${sign}${digits}`) * 10n ** BigInt(scale)
  return value >= -MAX_SAFE && value <= MAX_SAFE ? Number(value) : value
}

// No accepted body nests deeper than 1. The parsers recurse per level: a deeper body would overflow
// the stack, and the RangeError's text is not for clients.
const MAX_DEPTH = 64
const QUOTE = 0x22
const BACKSLASH = 0x5c

function nestingDepth (body: Buffer): number {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) {
      inString = true
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) max = depth
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return max
}

function reason (err: unknown): string {
  return err instanceof SyntaxError ? `: ${err.message.slice(0, 200)}` : ''
}

/** UTF-8 only, __proto__/constructor keys refused (as Fastify does), numbers exact (parsed again, losslessly, when needed). */
export function parseJsonBody (body: Buffer): unknown {
  if (!isUtf8(body)) throw new ApiError('invalid_json', 'request body is not valid UTF-8')
  if (nestingDepth(body) > MAX_DEPTH) throw new ApiError('invalid_json', `request body nests arrays or objects deeper than ${MAX_DEPTH} levels`)
  const text = body.toString('utf8')
  let value: unknown
  try {
    value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
  } catch (err) {
    const message = (err as Error).message
    if (/prototype|constructor/i.test(message)) throw new ApiError('invalid_json', 'request body uses a forbidden key (__proto__ or constructor.prototype)')
    throw new ApiError('invalid_json', `request body is not valid JSON${reason(err)}`)
  }
  if (/\d{16,}|\d[.eE]/.test(text)) {
    // A repeated key keeps its last value, as JSON.parse does and as any client will read it.
    try {
      value = parseLossless(text, undefined, { parseNumber: exactNumber, onDuplicateKey: ({ newValue }) => newValue })
    } catch (err) {
      throw new ApiError('invalid_json', `request body is not valid JSON${reason(err)}`)
    }
  }
  return value
}

/** application/json in UTF-8 is the only media type accepted; its size bound is the server's bodyLimit. */
export function installJsonBodyParser (app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, async (request: FastifyRequest, body: Buffer) => {
    const charset = charsetProblem(request.headers['content-type'] ?? '')
    if (charset !== undefined) throw charset
    if (body.length === 0) throw new ApiError('validation_failed', 'request body is required: a JSON object with name and categoryId')
    return parseJsonBody(body)
  })
}
