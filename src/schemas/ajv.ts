import { createRequire } from 'node:module'
import type { Ajv2020 } from 'ajv/dist/2020.js'
import { INT64_MAX, INT64_MIN } from './int64.js'

type Json = Record<string, unknown>

/**
 * Ajv for requests, as the service runs it: JSON Schema 2020-12 (the dialect of the OpenAPI 3.1
 * document), string lengths in code points and patterns with the `u` flag (Ajv's defaults), the
 * first error only, defaults filled in, and nothing coerced or silently dropped (Fastify's own Ajv
 * coerces "5" to 5 and removes unknown body fields: a client-sent id would vanish, not be refused).
 *
 * One addition, `int64`: Ajv's `type: "integer"` refuses a BigInt, which is how an integer past 2^53
 * arrives (bodies are parsed losslessly, path and query integers are read as BigInt). `withInt64`
 * replaces every `{type: "integer", format: "int64"}` by `{int64: true}`, which accepts a number or
 * BigInt whose exact value is an integer in the signed 64-bit range and leaves a BigInt in its place.
 * The exported factory lets a JavaScript client validate exactly as the server does.
 */
export function createRequestAjv (opts: { allErrors?: boolean } = {}): Ajv2020 {
  // Loaded here, when the first request validator is compiled, not at start: a start's first
  // requests, /healthz and /readyz, do not need it.
  const { Ajv2020 } = createRequire(import.meta.url)('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')
  const ajv = new Ajv2020({
    allErrors: opts.allErrors ?? false,
    coerceTypes: false,
    removeAdditional: false,
    useDefaults: true,
    verbose: true,
    strict: true,
    // The schemas are ours and fixed: strict mode refuses unknown keywords here, and Redocly checks
    // them in the document (npm run lint:openapi). Compiling the 2020-12 meta-schema to check them
    // again would cost every start (and every test app) a compile of that large meta-schema.
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
  // `format: int32` on a request integer (listPets' limit): the signed 32-bit range, as OpenAPI
  // defines it; the schemas that carry it bound the value more tightly anyway.
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
