import { Type } from 'typebox'

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

/**
 * An int64 carried as a BigInt inside the service. JSON Schema says integer/int64 (so the OpenAPI
 * document and fast-json-stringify write the exact digits); the TypeScript type is bigint.
 */
export const Int64 = (options: { description: string, minimum?: number }) =>
  Type.Unsafe<bigint>({ type: 'integer', format: 'int64', ...options })

/** The Error object of every error response. */
export const ErrorSchema = Type.Object({
  code: Type.String({ description: 'Machine-readable error code from the catalogue (snake_case). Branch on this.' }),
  message: Type.String({ description: 'Human-readable description naming the offending field or parameter and the rule.' }),
  status: Type.Integer({ description: 'The HTTP status code, equal to the response status.' })
}, { $id: 'Error', additionalProperties: false, description: 'Every error response carries this object.' })
