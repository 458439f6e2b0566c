import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { parse as parseLossless } from 'lossless-json'
import { INT64_MAX, INT64_MIN } from '../../src/schemas/int64.js'
import { PET_STATUSES } from '../../src/schemas/pets.js'
import { MORE_FIELDS } from './conformance.js'

/** fast-check settings for the suite: a fixed seed can be given (FC_SEED) to replay a failure. */
export function fcParams (numRuns: number): fc.Parameters<unknown> {
  const seed = process.env.FC_SEED
  return { numRuns, ...(seed !== undefined ? { seed: Number(seed) } : {}) }
}

/** Parses a response body keeping every integer exact (as BigInt). */
export function parseExact (text: string): unknown {
  return parseLossless(text, undefined, (s: string) => /^-?\d+$/.test(s) ? BigInt(s) : Number(s))
}

const codePoints = (s: string): number => [...s].length

/** Names the service must accept: 1–255 code points, not blank, any Unicode (astral, combining, controls). */
export const validName = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 255 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  fc.string({ unit: 'grapheme-composite', minLength: 1, maxLength: 255 }),
  fc.constantFrom('Rex', '\u{1F408}'.repeat(255), 'e\u0301'.repeat(127), 'a\u0000b', '\u2028\u2029', ' x ', '"\\</script>', '\uFEFF\u200B.')
).filter(s => codePoints(s) >= 1 && codePoints(s) <= 255 && /\S/u.test(s))

export const int64 = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.constantFrom(INT64_MIN, INT64_MIN + 1n, -(2n ** 53n) - 1n, -(2n ** 53n), -1n, 0n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, INT64_MAX - 1n, INT64_MAX)
)

export const status = fc.constantFrom(...PET_STATUSES)

export interface GenPet { name: string, categoryId: bigint, status: typeof PET_STATUSES[number] | undefined }

export const newPet: fc.Arbitrary<GenPet> = fc.record({ name: validName, categoryId: int64, status: fc.option(status, { nil: undefined }) })

/** The body as exact JSON text: the categoryId is written as its digits, in a random field order and spacing. */
export const newPetBody = (pet: GenPet): fc.Arbitrary<string> => {
  const fields = [`"name":${JSON.stringify(pet.name)}`, `"categoryId":${pet.categoryId}`]
  if (pet.status !== undefined) fields.push(`"status":${JSON.stringify(pet.status)}`)
  return fc.tuple(fc.shuffledSubarray(fields, { minLength: fields.length }), fc.constantFrom('', ' ', '\n\t'))
    .map(([order, ws]) => `{${ws}${order.join(`,${ws}`)}${ws}}`)
}

/** Every pet visible to the key, by walking Link rel="next" from the first page. */
export async function walkAll (app: FastifyInstance, auth: Record<string, string>, query = 'limit=100'): Promise<unknown[]> {
  const out: unknown[] = []
  let url: string | undefined = `/v1/pets?${query}`
  for (let pages = 0; url !== undefined; pages++) {
    if (pages > 10000) throw new Error('pagination does not end')
    const res: { statusCode: number, body: string, headers: Record<string, unknown> } = await app.inject({ url, headers: auth })
    if (res.statusCode !== 200) throw new Error(`list failed: ${res.statusCode} ${res.body}`)
    out.push(...(parseExact(res.body) as unknown[]))
    url = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ''))?.[1]
  }
  return out
}

/** Asserts the response is an Error object whose status equals the HTTP status; returns its code. */
export function errorCode (res: { statusCode: number, body: string, headers: Record<string, unknown> }): string {
  if (!String(res.headers['content-type']).startsWith('application/json')) throw new Error(`error without JSON content type: ${res.statusCode} ${String(res.headers['content-type'])}`)
  const body = JSON.parse(res.body) as Record<string, unknown>
  const keys = Object.keys(body).sort().join(',')
  if (keys !== 'code,message,status' && !(keys === 'code,details,message,status' && body.code === 'validation_failed')) throw new Error(`not an Error object: ${res.body}`)
  if (body.details !== undefined && (body.details as Array<{ message: string }>).map(d => d.message).join('; ') !== String(body.message).replace(MORE_FIELDS, '')) throw new Error(`details do not say what message says: ${res.body}`)
  if (body.status !== res.statusCode) throw new Error(`Error.status ${String(body.status)} ≠ HTTP ${res.statusCode}`)
  if (typeof body.code !== 'string' || typeof body.message !== 'string') throw new Error(`bad Error field types: ${res.body}`)
  return body.code
}
