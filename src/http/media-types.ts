import { ApiError } from '../errors.js'

export const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * What is wrong with the charset of a JSON body's Content-Type, as the 415 that answers it, or
 * undefined: the body is read as UTF-8, so a charset parameter, when given, says utf-8, once. The
 * body parser (json-body.ts) applies it, and so does the before-body plugin ahead of `100 Continue`.
 */
export function charsetProblem (contentType: string): ApiError | undefined {
  const charsets = contentType.includes(';') ? [...contentType.matchAll(/;\s*charset\s*=\s*"?([^";\s]*)/gi)] : []
  // RFC 6838 §4.3: a media type parameter given twice is an error; the first and the last may disagree.
  if (charsets.length > 1) return new ApiError('unsupported_media_type', 'the charset parameter of Content-Type must be given once')
  const charset = charsets[0]?.[1]
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) return new ApiError('unsupported_media_type', `charset ${charset} is not supported; send application/json in UTF-8`)
  return undefined
}
