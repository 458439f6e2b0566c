import { Type, type Static } from 'typebox'
import { Int64, Ref, WithDefaults } from './common.js'

/*
 * The contract of /v1/pets: the OpenAPI document is generated from these schemas and the server
 * validates with them (schemas/validator.ts), so /openapi.json gives a client the server's verdict.
 */

export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export type PetStatus = typeof PET_STATUSES[number]
export const DEFAULT_PET_STATUS: PetStatus = 'available'
export const NAME_MAX_LENGTH = 255
export const LIMIT_MIN = 1
export const LIMIT_MAX = 100
export const LIMIT_DEFAULT = 20
/** A cursor as the service issues them (services/cursor.ts): base64url, at most 30 characters. */
export const CURSOR_MAX_LENGTH = 30
export const CURSOR_PATTERN = '^[A-Za-z0-9_-]+$'

/**
 * A name with some non-white-space character and no lone surrogate (which UTF-8 cannot store: it
 * would come back as U+FFFD), in plain regex syntax every JSON Schema tool reads, meaning the same
 * with or without the `u` flag.
 */
export const NAME_PATTERN = '^\\s*([^\\s\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])([^\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$'
/** The IETF draft makes the value an sf-string ("…"); Stripe sends it bare. Both are accepted. */
export const IDEMPOTENCY_KEY = '^(?:[\\x21\\x23-\\x7E]{1,255}|"[\\x21\\x23-\\x7E]{1,255}")$'

/**
 * What each pattern above means, in the words of an error message, for the value that broke it (see
 * schemas/messages.ts). Maps, not plain objects, here and below: they are looked up by names the client
 * chose (a body field called `toString` must find nothing, not Object.prototype's).
 */
export const PATTERN_RULES: ReadonlyMap<string, (value: unknown) => string> = new Map<string, (value: unknown) => string>([
  [NAME_PATTERN, (value: unknown) => typeof value === 'string' && !/\S/u.test(value) ? 'must not be blank' : 'must be well-formed Unicode (no lone surrogate escapes)'],
  [IDEMPOTENCY_KEY, () => 'must be sent once, 1 to 255 printable ASCII characters without spaces or quotes (optionally in double quotes)'],
  [CURSOR_PATTERN, () => 'must be a cursor from the `Link: rel="next"` header of a previous page (base64url characters)']
])

/** Body fields that belong to the resource but are not the client's to send (a client-sent `id`), and why. */
export const SERVICE_ASSIGNED_FIELDS: ReadonlyMap<string, string> = new Map([['id', 'is assigned by the service and must not be sent']])

export const PetStatusSchema = Type.Unsafe<PetStatus>({
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Availability status.'
})

const nameSchema = (description: string) => Type.String({
  minLength: 1,
  maxLength: NAME_MAX_LENGTH,
  pattern: NAME_PATTERN,
  description
})

export const NewPetSchema = WithDefaults({
  name: nameSchema("The animal's name: 1 to 255 characters (Unicode code points), not only white space, and well-formed: a UTF-16 surrogate escape must be half of a pair."),
  categoryId: Int64({ description: 'Identifier of the category the animal belongs to (int64; values beyond 2^53 are kept exactly). A JSON number whose exact value is an integer: `1e3` is 1000, `1.5` and `1.0000000000000001` are not integers.' }),
  status: { ...PetStatusSchema, default: DEFAULT_PET_STATUS, description: 'Availability status; `available` when omitted.' } as typeof PetStatusSchema
}, { $id: 'NewPet', additionalProperties: false, description: 'Request body of createPet. Unknown fields, and a client-sent id, are refused.', examples: [{ name: 'Rex', categoryId: 3, status: 'pending' }] })
/** A createPet body once validated: `status` holds the default when the client left it out. */
export type NewPet = Static<typeof NewPetSchema>

export const PetSchema = Type.Object({
  id: Int64({ description: 'Unique identifier, assigned by the service on creation; never reused.' }),
  name: nameSchema("The animal's name."),
  categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
  status: PetStatusSchema
}, { $id: 'Pet', additionalProperties: false, description: 'An animal.', examples: [{ id: 42, name: 'Rex', categoryId: 3, status: 'pending' }] })
export type Pet = Static<typeof PetSchema>

export const PetsSchema = Type.Array(Ref(PetSchema), { maxItems: LIMIT_MAX, description: 'A page of animals, in ascending id order: at most `limit` of them.' })

export const ListPetsQuerySchema = WithDefaults({
  limit: Type.Integer({ format: 'int32', minimum: LIMIT_MIN, maximum: LIMIT_MAX, default: LIMIT_DEFAULT, description: 'Maximum number of animals returned, 1 to 100, in decimal digits without sign or leading zeros.' }),
  status: Type.Optional(PetStatusSchema),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: CURSOR_MAX_LENGTH, pattern: CURSOR_PATTERN, description: 'Opaque cursor from the `Link: rel="next"` header of the previous page. Only valid with the same status filter.' }))
}, { additionalProperties: false })
export type ListPetsQuery = Static<typeof ListPetsQuerySchema>

export const PetIdParamsSchema = Type.Object({
  petId: Int64({ description: 'The identifier of the animal (int64), in decimal digits: `-` for negatives, no `+`, no leading zeros.' })
})

/** The request headers createPet reads (names are case-insensitive; Fastify matches them lower-cased). */
export const CreatePetHeadersSchema = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    pattern: IDEMPOTENCY_KEY,
    description: 'Makes the create safe to retry: 1 to 255 printable ASCII characters without spaces or quotes, bare (`abc-123`) or as a structured-field string (`"abc-123"`), scoped to the API key. ' +
      'A retry with the same key and body answers the original 201 with `Idempotent-Replayed: true`; the same key with another body is 422; while the first is still running, 409.'
  }))
})

/** The request headers of the reads that carry an ETag. */
export const ConditionalReadHeadersSchema = Type.Object({
  'if-none-match': Type.Optional(Type.String({
    description: 'Entity tags the client holds (`"…"`, `W/"…"` or `*`, comma-separated): when one names the current ETag the answer is 304 with no body. Any other value is simply no match.'
  })),
  'if-match': Type.Optional(Type.String({
    description: 'Entity tags (`"…"` or `*`, comma-separated) the representation must still have (strong comparison): when none names the current ETag the answer is 412 `precondition_failed`, so a client holding an old copy learns it is stale. The tag of any content coding of the current representation holds (`"…-gzip"`, `"…-br"`): a coding is not a change.'
  })),
  'accept-encoding': Type.Optional(Type.String({
    description: 'Content codings the client accepts (RFC 9110 §12.5.3, q-values, `identity` and `*` included): the body is sent `gzip` or `br` (`Content-Encoding`), the client\'s preferred of them, br on a tie, when it is 1024 bytes or more (any size when identity is refused); smaller bodies, and any body when neither is accepted, are sent as they are. Each coding has its own ETag.'
  }))
})
