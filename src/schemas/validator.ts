import type { Ajv2020, ValidateFunction } from 'ajv/dist/2020.js'
import type { FastifySchemaCompiler } from 'fastify'
import type { TSchema } from 'typebox'
import { createRequestAjv, withInt64 } from './ajv.js'
import { requestError, type RequestPart, type RulePhrases } from './messages.js'

type Json = Record<string, any>

/**
 * The one grammar of an integer in a path or a query: decimal digits, `-` for negatives, no `+`, no
 * leading zeros, no spaces (`7`, `-7`, `0`; not `007`, `-0`, `+7`, `7.0`, `1e3`, `0x7`). It is how
 * every client library writes an integer, and it gives each number exactly one spelling.
 */
export const DECIMAL_INTEGER = /^(?:0|-?[1-9][0-9]*)$/

/**
 * Query and path values arrive as strings. Each property the schema types as an integer is read
 * here, by the one grammar above, into a number (BigInt for int64, so nothing is rounded); anything
 * else is left as it is, and the schema then refuses it (a string is no integer). This is the only
 * conversion: Ajv's own coerceTypes would also take " 5", "5.0" or "" for numbers.
 */
function integerReader (schema: Json): (data: unknown) => unknown {
  const props = Object.entries((schema.properties ?? {}) as Record<string, Json>)
  const int64 = props.filter(([, s]) => s.int64 === true).map(([k]) => k)
  const integer = props.filter(([, s]) => s.type === 'integer').map(([k]) => k)
  if (int64.length === 0 && integer.length === 0) return (data) => data
  return (data) => {
    if (data === null || typeof data !== 'object') return data
    const out: Record<string, unknown> = { ...data }
    for (const k of int64) if (typeof out[k] === 'string' && DECIMAL_INTEGER.test(out[k])) out[k] = BigInt(out[k])
    for (const k of integer) if (typeof out[k] === 'string' && DECIMAL_INTEGER.test(out[k])) out[k] = Number(out[k])
    return out
  }
}

/**
 * Fastify's validator compiler for every request part: Ajv (createRequestAjv) over the very schema
 * the route declares, which is also what @fastify/swagger writes into the OpenAPI document. `shared`
 * are the schemas routes refer to by $ref (see registerSchemas). A failure becomes the API's Error,
 * naming the field or parameter and the rule (schemas/messages.ts).
 */
export function createValidatorCompiler (shared: readonly TSchema[], phrases: RulePhrases): FastifySchemaCompiler<TSchema> {
  // Built with the first validator, and each validator compiled on its first request rather than for
  // every route at start (compiling is synchronous, so concurrent first requests cannot race).
  // Two instances: a body is checked whole (every broken rule reported at once); query, path and
  // headers stop at their first error.
  const instances = new Map<boolean, Ajv2020>()
  const requestAjv = (allErrors: boolean): Ajv2020 => {
    let ajv = instances.get(allErrors)
    if (ajv === undefined) {
      ajv = createRequestAjv({ allErrors })
      for (const schema of shared) ajv.addSchema(withInt64(schema))
      instances.set(allErrors, ajv)
    }
    return ajv
  }
  return ({ schema, httpPart }) => {
    const part = (httpPart ?? 'body') as RequestPart
    const prepared = withInt64(schema as Json)
    const read = part === 'querystring' || part === 'params' ? integerReader(prepared) : (data: unknown) => data
    let validate: ValidateFunction | undefined
    return (data: unknown) => {
      validate ??= requestAjv(part === 'body').compile(prepared)
      const value = read(data)
      if (validate(value)) return { value }
      return { error: requestError(validate.errors!, part, phrases) }
    }
  }
}
