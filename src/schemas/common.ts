import { Type, type TObject, type TProperties, type TSchema } from 'typebox'
import { ERROR_CODES } from '../errors.js'

/** An int64: integer/int64 in the document and on the wire, a BigInt in the service. */
export const Int64 = (options: { description: string }) =>
  Type.Unsafe<bigint>({ type: 'integer', format: 'int64', ...options })

/** An object whose defaulted properties are optional to the client but always present once validated (the static type says so). */
export function WithDefaults<P extends TProperties> (properties: P, options: { $id?: string, additionalProperties?: boolean, description?: string, examples?: unknown[] } = {}): TObject<P> {
  // TypeBox writes `required` from the client's view: a property with a default is optional.
  const sent = Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, 'default' in s ? Type.Optional(s) : s]))
  return Type.Object(sent, options) as TSchema as TObject<P>
}

/** What every error code is, including codes this version does not know yet: lower-case snake_case. */
export const ERROR_CODE_PATTERN = '^[a-z][a-z0-9_]*$'
export const ERROR_CODE_MAX_LENGTH = 64

/** The most entries `details` holds; the broken rules past them are counted in `message` (schemas/messages.ts). */
export const DETAILS_MAX_ITEMS = 100
/** The longest `details[].field`, in characters; a longer name is cut to fit and ends with `…`. */
export const DETAIL_FIELD_MAX_LENGTH = 200

/**
 * The Error object. `code` is an open set (docs/reference/compatibility.md): the catalogue's enum or
 * any snake_case string; `x-error-codes` carries each known code's status and meaning.
 */
export const ErrorSchema = Type.Object({
  code: Type.Unsafe<string>({
    anyOf: [
      { type: 'string', enum: Object.keys(ERROR_CODES) },
      { type: 'string', maxLength: ERROR_CODE_MAX_LENGTH, pattern: ERROR_CODE_PATTERN }
    ],
    description: 'Machine-readable error code: one of the catalogue (see `x-error-codes`: its status and meaning), or a code added after this document was written, ' +
      'which a client handles by the HTTP status (an unknown 4xx code as a refusal of the request, an unknown 5xx code as a failure of the service). ' +
      'Branch on this, never on `message`.'
  }),
  message: Type.String({ description: 'Human-readable description naming the offending field or parameter and the rule.' }),
  status: Type.Integer({ format: 'int32', minimum: 400, maximum: 599, description: 'The HTTP status code, equal to the response status (4xx or 5xx).' }),
  details: Type.Optional(Type.Array(Type.Object({
    field: Type.String({
      maxLength: DETAIL_FIELD_MAX_LENGTH,
      description: `The body field, as a dotted path (\`name\`, \`tags.0\`). A path longer than ${DETAIL_FIELD_MAX_LENGTH} characters is cut to its first ${DETAIL_FIELD_MAX_LENGTH - 1} followed by \`…\`, here and where \`message\` quotes it.`
    }),
    message: Type.String({ description: 'The rule it breaks, as the sentence `message` holds for it.' })
  }, { additionalProperties: false }), {
    minItems: 1,
    maxItems: DETAILS_MAX_ITEMS,
    description: 'With `validation_failed`: every broken rule of the request body, one per field, in the order of `message`. ' +
      `When more than ${DETAILS_MAX_ITEMS} fields break a rule, it holds the first ${DETAILS_MAX_ITEMS} and \`message\` ends with how many more were left out ` +
      '(`; and N more fields break a rule, not listed`). Additive: a client may ignore it, and other codes may carry it later.'
  }))
}, {
  $id: 'Error',
  additionalProperties: false,
  description: 'Every error response carries this object, as application/json.',
  'x-error-codes': ERROR_CODES
})

/** A reference to a schema added with app.addSchema (see registerSchemas), typed as the schema it names. */
export const Ref = <T extends TSchema>(schema: T): T => ({ $ref: `${(schema as { $id?: string }).$id ?? ''}#` }) as unknown as T
