/**
 * A typed client for the Petstore v1 API (document: GET /openapi.json of any server).
 *
 * int64 fields (`id`, `categoryId`) are BigInt: JSON.parse would round values past 2^53, so
 * responses are parsed losslessly. `createPet` takes a bigint or a safe-integer number.
 */
export { createClient, PetstoreClient } from './client.js'
export {
  ERROR_CODES, isKnownErrorCode, PetstoreConnectionError, PetstoreError, PetstoreInsufficientScopeError, PetstoreKeyExpiredError, PetstoreTimeoutError,
  type ErrorBody, type ErrorCode, type KnownErrorCode
} from './errors.js'
export { parseLinkHeader } from './links.js'
export { parseRetryAfter } from './retry.js'
export {
  PET_STATUSES,
  type CallOptions, type ClientOptions, type CreatePetOptions, type DeprecationNotice, type ListPetsParams,
  type NewPet, type Pet, type PetsPage, type PetStatus, type RetryOptions
} from './types.js'
