import { createRequire } from 'node:module'
import type { Ajv2020 } from 'ajv/dist/2020.js'
import { INT64_MAX, INT64_MIN } from './int64.js'

type Json = Record<string, unknown>

/**
 * Ajv for requests: JSON Schema 2020-12 (the document's dialect), defaults filled in, nothing coerced
 * or dropped, as Ajv ships (Fastify's own Ajv coerces "5" to 5 and removes unknown fields: a
 * client-sent id would vanish instead of being refused). `allErrors` for bodies, which are answered
 * with every broken rule. One keyword added, `int64` (see withInt64): Ajv's integer refuses a BigInt,
 * which is how an integer past 2^53 arrives.
 */
export function createRequestAjv (opts: { allErrors?: boolean } = {}): Ajv2020 {
  // Loaded with the first validator, not at start.
  const { Ajv2020 } = createRequire(import.meta.url)('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')
  const ajv = new Ajv2020({
    allErrors: opts.allErrors ?? false,
    useDefaults: true,
    verbose: true,
    strict: true,
    // Our fixed schemas: strict mode and Redocly (npm run lint:openapi) check them, not the meta-schema.
    validateSchema: false
  })
  ajv.addKeyword({
    keyword: 'int64',
    schemaType: 'boolean',
    modifying: true,
    errors: false,
    validate: (_schema: boolean, data: unknown, _parent?: unknown, cxt?: { parentData: Json, parentDataProperty: string | number }) => {
      let value: bigint
      if (typeof data === 'bigint') value = data
      else if (typeof data === 'number' && Number.isInteger(data)) value = BigInt(data)
      else return false
      if (value < INT64_MIN || value > INT64_MAX) return false
      if (cxt?.parentData !== undefined) (cxt.parentData as Record<string | number, unknown>)[cxt.parentDataProperty] = value
      return true
    }
  })
  // OpenAPI's int32: the signed 32-bit range (the schemas that carry it bound it more tightly).
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 })
  // Annotations of the document that validate nothing.
  ajv.addKeyword('x-error-codes')
  return ajv
}

/** A copy of `schema` in which every int64 integer is checked by the `int64` keyword (see createRequestAjv). */
export function withInt64<T> (schema: T): T {
  if (Array.isArray(schema)) return schema.map(withInt64) as T
  if (schema === null || typeof schema !== 'object') return schema
  const out: Json = {}
  const s = schema as Json
  const int64 = s.type === 'integer' && s.format === 'int64'
  for (const [k, v] of Object.entries(s)) {
    if (int64 && (k === 'type' || k === 'format')) continue
    // `default`, `enum` and `const` hold data, not schemas.
    out[k] = k === 'default' || k === 'enum' || k === 'const' ? v : withInt64(v)
  }
  if (int64) out.int64 = true
  return out as T
}
