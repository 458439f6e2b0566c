import type { Ajv2020, ValidateFunction } from 'ajv/dist/2020.js'
import type { FastifySchemaCompiler } from 'fastify'
import type { TSchema } from 'typebox'
import { createRequestAjv, withInt64 } from './ajv.js'
import { requestError, type RequestPart } from './messages.js'

type Json = Record<string, any>

/** An integer in a path or query: one spelling per number (`7`, `-7`, `0`; not `007`, `-0`, `+7`, `1e3`). */
export const DECIMAL_INTEGER = /^(?:0|-?[1-9][0-9]*)$/

/**
 * Reads the integer properties of a query or path by that grammar (BigInt for int64); anything else
 * stays a string, which the schema refuses. Ajv's coerceTypes would also take " 5", "5.0" or "".
 */
function integerReader (schema: Json): (data: unknown) => unknown {
  const readers = Object.entries((schema.properties ?? {}) as Record<string, Json>)
    .flatMap(([k, s]): Array<[string, (digits: string) => unknown]> => s.int64 === true ? [[k, BigInt]] : s.type === 'integer' ? [[k, Number]] : [])
  if (readers.length === 0) return (data) => data
  return (data) => {
    if (data === null || typeof data !== 'object') return data
    const out: Record<string, unknown> = { ...data }
    for (const [k, read] of readers) if (typeof out[k] === 'string' && DECIMAL_INTEGER.test(out[k])) out[k] = read(out[k])
    return out
  }
}

/**
 * Fastify's validator compiler: Ajv over the schema the route declares (the one the document shows),
 * with `shared` for $refs. A failure becomes the API's Error (schemas/messages.ts).
 */
export function createValidatorCompiler (shared: readonly TSchema[]): FastifySchemaCompiler<TSchema> {
  // Each validator is compiled on its first request (synchronously: no race). Bodies get an Ajv that
  // collects every error (instances[1]); query, path and headers one that stops at the first ([0]).
  const instances: Array<Ajv2020 | undefined> = []
  const requestAjv = (allErrors: boolean): Ajv2020 =>
    (instances[Number(allErrors)] ??= createRequestAjv({ allErrors }).addSchema(shared.map(withInt64)))
  return ({ schema, httpPart }) => {
    const part = (httpPart ?? 'body') as RequestPart
    const prepared = withInt64(schema as Json)
    const read = part === 'querystring' || part === 'params' ? integerReader(prepared) : (data: unknown) => data
    let validate: ValidateFunction | undefined
    return (data: unknown) => {
      validate ??= requestAjv(part === 'body').compile(prepared)
      const value = read(data)
      if (validate(value)) return { value }
      return { error: requestError(validate.errors!, part) }
    }
  }
}
