import { Type, type Static } from 'typebox'
import { ApiError } from '../errors.js'
import { Int64, INT64_MAX, INT64_MIN, Ref } from './common.js'

export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export type PetStatus = typeof PET_STATUSES[number]
export const DEFAULT_PET_STATUS: PetStatus = 'available'
export const NAME_MAX_LENGTH = 255
export const LIMIT_MIN = 1
export const LIMIT_MAX = 100
export const LIMIT_DEFAULT = 20

export const PetStatusSchema = Type.Unsafe<PetStatus>({
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Availability status.'
})

export const NewPetSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, pattern: '\\S', description: "The animal's name: 1 to 255 characters, not only white space." }),
  categoryId: Int64({ description: 'Identifier of the category the animal belongs to (int64; values beyond 2^53 are kept exactly).' }),
  status: Type.Optional({ ...PetStatusSchema, default: DEFAULT_PET_STATUS, description: 'Availability status; `available` when omitted.' } as typeof PetStatusSchema)
}, { $id: 'NewPet', additionalProperties: false, description: 'Request body of createPet. Unknown fields, and a client-sent id, are refused.' })
export type NewPet = Static<typeof NewPetSchema>

export const PetSchema = Type.Object({
  id: Int64({ description: 'Unique identifier, assigned by the service on creation; never reused.' }),
  name: Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, pattern: '\\S', description: "The animal's name." }),
  categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
  status: PetStatusSchema
}, { $id: 'Pet', additionalProperties: false, description: 'An animal.' })
export type Pet = Static<typeof PetSchema>

export const PetsSchema = Type.Array(Ref(PetSchema), { description: 'A page of animals, in ascending id order.' })

export const ListPetsQuerySchema = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: LIMIT_MIN, maximum: LIMIT_MAX, default: LIMIT_DEFAULT, description: 'Maximum number of animals returned, 1 to 100.' })),
  status: Type.Optional(PetStatusSchema),
  cursor: Type.Optional(Type.String({ minLength: 1, description: 'Opaque cursor from the `Link: rel="next"` header of the previous page. Only valid with the same status filter.' }))
}, { additionalProperties: false })

export interface ListPetsQuery {
  limit: number
  status: PetStatus | undefined
  cursor: string | undefined
}

export const PetIdParamsSchema = Type.Object({
  petId: Int64({ description: 'The identifier of the animal (int64).' })
})
export interface PetIdParams { petId: bigint }

/*
 * Validators. Ajv cannot check int64 values held as BigInt, and its messages do not name the rule
 * the way clients need, so the three request parts are checked here, by hand, against exactly the
 * rules the schemas above declare (the conformance tests hold the two together).
 */

const NEW_PET_FIELDS = new Set(['name', 'categoryId', 'status'])
const STATUS_SET = new Set<string>(PET_STATUSES)
const STATUS_LIST = PET_STATUSES.join(', ')

function isInt64 (v: unknown): v is number | bigint {
  if (typeof v === 'bigint') return v >= INT64_MIN && v <= INT64_MAX
  return typeof v === 'number' && Number.isSafeInteger(v)
}

function bodyError (message: string): ApiError {
  return new ApiError('validation_failed', message)
}

/** Checks a parsed JSON body against NewPetSchema; returns the NewPet with defaults applied. */
export function validateNewPet (body: unknown): NewPet {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw bodyError('request body must be a JSON object with name and categoryId')
  }
  const input = body as Record<string, unknown>
  for (const key of Object.keys(input)) {
    if (key === 'id') throw bodyError("body field 'id' is assigned by the service and must not be sent")
    if (!NEW_PET_FIELDS.has(key)) throw bodyError(`body field '${key}' is not allowed; allowed fields are name, categoryId, status`)
  }
  const { name, categoryId, status } = input
  if (name === undefined) throw bodyError("body field 'name' is required")
  if (typeof name !== 'string') throw bodyError("body field 'name' must be a string")
  let length = 0
  for (const _ of name) length++ // code points, not UTF-16 units
  if (length < 1 || length > NAME_MAX_LENGTH) throw bodyError(`body field 'name' must be 1 to ${NAME_MAX_LENGTH} characters long`)
  if (!/\S/u.test(name)) throw bodyError("body field 'name' must not be blank")
  // A lone surrogate cannot be stored as UTF-8: it would come back as U+FFFD, a different name.
  if (/\p{Cs}/u.test(name)) throw bodyError("body field 'name' must be well-formed Unicode (no lone surrogate escapes)")
  if (categoryId === undefined) throw bodyError("body field 'categoryId' is required")
  if (!isInt64(categoryId)) throw bodyError(`body field 'categoryId' must be an integer from ${INT64_MIN} to ${INT64_MAX}`)
  if (status !== undefined && (typeof status !== 'string' || !STATUS_SET.has(status))) {
    throw bodyError(`body field 'status' must be one of ${STATUS_LIST}`)
  }
  return {
    name,
    categoryId: BigInt(categoryId),
    status: (status as PetStatus | undefined) ?? DEFAULT_PET_STATUS
  }
}

function paramError (message: string): ApiError {
  return new ApiError('invalid_parameter', message)
}

const LIMIT_PATTERN = /^[1-9][0-9]{0,2}$/

/** Checks the query of listPets: only limit, status and cursor, each at most once. */
export function validateListPetsQuery (query: unknown): ListPetsQuery {
  const q = (query ?? {}) as Record<string, unknown>
  const out: ListPetsQuery = { limit: LIMIT_DEFAULT, status: undefined, cursor: undefined }
  for (const key of Object.keys(q)) {
    const value = q[key]
    if (key !== 'limit' && key !== 'status' && key !== 'cursor') {
      throw paramError(`query parameter '${key}' is not supported; supported parameters are limit, status, cursor`)
    }
    if (typeof value !== 'string') throw paramError(`query parameter '${key}' must be given at most once`)
    if (key === 'limit') {
      const n = LIMIT_PATTERN.test(value) ? Number(value) : NaN
      if (!(n >= LIMIT_MIN && n <= LIMIT_MAX)) throw paramError(`query parameter 'limit' must be an integer from ${LIMIT_MIN} to ${LIMIT_MAX}`)
      out.limit = n
    } else if (key === 'status') {
      if (!STATUS_SET.has(value)) throw paramError(`query parameter 'status' must be one of ${STATUS_LIST}`)
      out.status = value as PetStatus
    } else {
      if (value === '') throw paramError("query parameter 'cursor' must not be empty")
      out.cursor = value
    }
  }
  return out
}

const INT64_PATTERN = /^-?[0-9]{1,19}$/

/** Checks the petId path parameter: an int64 in decimal digits. */
export function validatePetIdParams (params: unknown): PetIdParams {
  const raw = (params as Record<string, unknown> | null)?.petId
  if (typeof raw === 'string' && INT64_PATTERN.test(raw)) {
    const id = BigInt(raw)
    if (id >= INT64_MIN && id <= INT64_MAX) return { petId: id }
  }
  throw paramError("path parameter 'petId' must be an integer from -9223372036854775808 to 9223372036854775807")
}
