import { isUtf8 } from 'node:buffer'
import type { FastifyInstance } from 'fastify'
import { parse as parseLossless } from 'lossless-json'
import sjson from 'secure-json-parse'
import { ApiError } from '../errors.js'

/** Integers past 2^53 are only exact as BigInt; smaller ones stay plain numbers. */
function parseNumber (text: string): number | bigint {
  if (/^-?\d+$/.test(text)) {
    const n = Number(text)
    return Number.isSafeInteger(n) ? n : BigInt(text)
  }
  return Number(text)
}

/**
 * Parses a JSON body strictly and losslessly: UTF-8 only, __proto__/constructor keys refused (the
 * prototype-poisoning guard Fastify uses), and integers kept exact (a body whose text holds a run of
 * 16+ digits is parsed a second time, losslessly, so categoryId keeps all 64 bits).
 */
export function parseJsonBody (body: Buffer): unknown {
  if (!isUtf8(body)) throw new ApiError('invalid_json', 'request body is not valid UTF-8')
  const text = body.toString('utf8')
  let value: unknown
  try {
    value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
  } catch (err) {
    const message = (err as Error).message
    if (/prototype|constructor/i.test(message)) throw new ApiError('invalid_json', 'request body uses a forbidden key (__proto__ or constructor.prototype)')
    throw new ApiError('invalid_json', `request body is not valid JSON: ${message.slice(0, 200)}`)
  }
  if (/\d{16,}/.test(text)) {
    try {
      value = parseLossless(text, undefined, parseNumber)
    } catch (err) {
      // JSON.parse let the last of duplicate keys win; the lossless parser refuses them instead.
      throw new ApiError('invalid_json', `request body is not valid JSON: ${(err as Error).message.slice(0, 200)}`)
    }
  }
  return value
}

/** Replaces Fastify's body parsers: application/json (UTF-8) is the only media type accepted. */
export function installJsonBodyParser (app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (request, body, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1]
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      done(new ApiError('unsupported_media_type', `charset ${charset} is not supported; send application/json in UTF-8`), undefined)
      return
    }
    if ((body as Buffer).length === 0) {
      done(new ApiError('validation_failed', 'request body is required: a JSON object with name and categoryId'), undefined)
      return
    }
    try {
      done(null, parseJsonBody(body as Buffer))
    } catch (err) {
      done(err as Error, undefined)
    }
  })
}
