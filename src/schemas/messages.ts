import type { ErrorObject } from 'ajv'
import { ApiError, type FieldError } from '../errors.js'
import { DETAIL_FIELD_MAX_LENGTH, DETAILS_MAX_ITEMS } from './common.js'
import { INT64_MAX, INT64_MIN } from './int64.js'
import { PATTERN_RULES, SERVICE_ASSIGNED_FIELDS } from './pets.js'

/** The request parts Fastify validates, by the name it gives them. */
export type RequestPart = 'body' | 'querystring' | 'params' | 'headers'

type Json = Record<string, any>

const SUBJECT: Record<RequestPart, string> = { body: 'body field', querystring: 'query parameter', params: 'path parameter', headers: 'header' }
const ARTICLE = new Map([['string', 'a string'], ['object', 'an object'], ['array', 'an array'], ['boolean', 'a boolean'], ['number', 'a number'], ['integer', 'an integer'], ['null', 'null']])

/** "idempotency-key" → "Idempotency-Key": the usual spelling (Fastify matches header names lower-cased). */
const headerCase = (name: string): string => name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase())

/**
 * A name the client chose, as the Error shows it: at most DETAIL_FIELD_MAX_LENGTH characters (code
 * points, as JSON Schema's maxLength counts them), a longer one cut and ending with `…`.
 */
function shown (name: string): string {
  // UTF-16 units are never fewer than code points: most names are decided here.
  if (name.length <= DETAIL_FIELD_MAX_LENGTH) return name
  const chars = [...name]
  return chars.length <= DETAIL_FIELD_MAX_LENGTH ? name : `${chars.slice(0, DETAIL_FIELD_MAX_LENGTH - 1).join('')}…`
}

/** The rule a value of schema `s` breaks, in words, from the schema itself. */
export function rule (e: ErrorObject, s: Json): string {
  if (Array.isArray(s.enum)) return `must be one of ${s.enum.join(', ')}`
  if (s.int64 === true) return `must be an integer from ${INT64_MIN} to ${INT64_MAX}`
  if (s.type === 'integer') return `must be an integer from ${String(s.minimum)} to ${String(s.maximum)}`
  switch (e.keyword) {
    case 'type':
      return `must be ${ARTICLE.get(String(s.type)) ?? String(s.type)}`
    case 'minLength':
    case 'maxLength':
      if (s.maxLength !== undefined) return `must be ${String(s.minLength ?? 0)} to ${String(s.maxLength)} characters long`
      return s.minLength === 1 ? 'must not be empty' : `must be at least ${String(s.minLength)} characters long`
    case 'pattern':
      return PATTERN_RULES.get(String(s.pattern))?.(e.data) ?? `must match the pattern ${String(s.pattern)}`
  }
  return e.message ?? 'is not valid'
}

/** One Ajv error in words: the field or parameter it is about (undefined: the part as a whole) and the sentence. */
function describe (e: ErrorObject, part: RequestPart): { field: string | undefined, message: string } {
  const s = (e.parentSchema ?? {}) as Json
  // The field the error is about; undefined for the part as a whole. A name can be empty (`?=`).
  const path = e.keyword === 'required'
    ? String(e.params.missingProperty)
    : e.keyword === 'additionalProperties'
      ? String(e.params.additionalProperty)
      : e.instancePath === '' ? undefined : e.instancePath.split('/').slice(1).map(p => p.replace(/~1/g, '/').replace(/~0/g, '~')).join('.')
  if (path === undefined) {
    const required: string[] = s.required ?? []
    return {
      field: undefined,
      message: part === 'body'
        ? `request body must be a JSON object with ${required.join(' and ')}`
        : `${SUBJECT[part]}s must be an object`
    }
  }
  const field = shown(path)
  const subject = field === '' ? `${SUBJECT[part]} with an empty name` : `${SUBJECT[part]} '${part === 'headers' ? headerCase(field) : field}'`
  if (e.keyword === 'required') return { field, message: `${subject} is required` }
  if (e.keyword === 'additionalProperties') {
    const known = Object.keys(s.properties ?? {}).join(', ')
    if (part !== 'body') return { field, message: `${subject} is not supported; supported parameters are ${known}` }
    return { field, message: `${subject} ${SERVICE_ASSIGNED_FIELDS.get(field) ?? `is not allowed (allowed fields are ${known})`}` }
  }
  // Query and header values are strings; an array means the parameter came more than once.
  if (part !== 'body' && Array.isArray(e.data)) return { field, message: `${subject} must be given at most once` }
  return { field, message: `${subject} ${rule(e, s)}` }
}

/**
 * What Ajv found, as the API's Error: `validation_failed` for the body (each broken field once, in
 * the message joined by "; " and in `details`), `invalid_parameter` for the first error of a query,
 * path or header. `details` holds at most DETAILS_MAX_ITEMS fields, as the Error schema says; the
 * message then ends with how many more broke a rule.
 */
export function requestError (errors: readonly ErrorObject[], part: RequestPart): ApiError {
  const code = part === 'body' ? 'validation_failed' : 'invalid_parameter'
  const first = describe(errors[0]!, part)
  if (part !== 'body' || first.field === undefined) return new ApiError(code, first.message)
  const details: FieldError[] = []
  const seen = new Set<string>()
  for (const e of errors) {
    const { field, message } = describe(e, part)
    if (field === undefined) return new ApiError(code, message)
    if (seen.has(field)) continue
    seen.add(field)
    if (details.length < DETAILS_MAX_ITEMS) details.push({ field, message })
  }
  const more = seen.size - details.length
  const listed = details.map(d => d.message).join('; ')
  const message = more === 0 ? listed : `${listed}; and ${more} more ${more === 1 ? 'field breaks' : 'fields break'} a rule, not listed`
  return new ApiError(code, message, undefined, details)
}
