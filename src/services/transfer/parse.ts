import { parse } from 'lossless-json'
import { INT64_MAX, INT64_MIN } from '../../schemas/int64.js'
import { NAME_MAX_LENGTH, PET_STATUSES, type PetStatus } from '../../schemas/pets.js'
import { ALL_SCOPES, isScope, type Scope } from '../../schemas/scopes.js'
import {
  COUNT_NAMES, type Counts, type DataRecord, FORMAT, type Header, PetDigest, READABLE_VERSIONS, TransferLineError
} from './format.js'
import type { Line } from './lines.js'

/*
 * Reads an export file line by line and checks every line before it reaches a store: the header
 * (format, version, counts), each record's fields against the rules the API and the stores hold,
 * the order of the sections, ascending pet ids, the announced counts, and the end line's checksum.
 * Any problem is a TransferLineError naming the line.
 */

type Json = Record<string, unknown>
const SECTION: Record<DataRecord['type'], number> = { setting: 0, apiKey: 1, pet: 2, idempotencyKey: 3 }
const SECTION_NAMES = ['setting', 'apiKey', 'pet', 'idempotencyKey']
const COUNT_OF: Record<DataRecord['type'], keyof Counts> = { setting: 'settings', apiKey: 'apiKeys', pet: 'pets', idempotencyKey: 'idempotencyKeys' }
const STATUS_SET = new Set<string>(PET_STATUSES)
const HASH = /^[0-9a-f]{64}$/
const IDEM_KEY = /^[\x21-\x7e]{1,255}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Integers become BigInt (exact); anything else stays a number, refused where an integer is due. */
const parseNumber = (digits: string): bigint | number => /^-?(0|[1-9][0-9]*)$/.test(digits) ? BigInt(digits) : Number(digits)

function object (line: Line): Json {
  let value: unknown
  try {
    value = parse(line.text, undefined, parseNumber)
  } catch (err) {
    throw new TransferLineError(line.no, `not valid JSON (${(err as Error).message})`)
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TransferLineError(line.no, 'not a JSON object')
  return value as Json
}

class Fields {
  constructor (private readonly o: Json, private readonly no: number, private readonly what: string, allowed: readonly string[]) {
    for (const key of Object.keys(o)) {
      if (!allowed.includes(key)) throw this.error(`${what} has an unknown field '${key}' (allowed: ${allowed.join(', ')})`)
    }
  }

  error (problem: string): TransferLineError { return new TransferLineError(this.no, problem) }

  private get (name: string): unknown {
    if (!Object.hasOwn(this.o, name)) throw this.error(`${this.what} lacks the field '${name}'`)
    return this.o[name]
  }

  string (name: string, rule?: (s: string) => string | undefined): string {
    const v = this.get(name)
    if (typeof v !== 'string') throw this.error(`${this.what} field '${name}' must be a string`)
    const broken = rule?.(v)
    if (broken !== undefined) throw this.error(`${this.what} field '${name}' ${broken}`)
    return v
  }

  int64 (name: string, min = INT64_MIN): bigint {
    const v = this.get(name)
    if (typeof v !== 'bigint' || v < min || v > INT64_MAX) throw this.error(`${this.what} field '${name}' must be an integer from ${min} to ${INT64_MAX}`)
    return v
  }

  keyId (name: string): number {
    const v = this.int64(name, 1n)
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw this.error(`${this.what} field '${name}' must be at most ${Number.MAX_SAFE_INTEGER}`)
    return Number(v)
  }

  count (name: string): number {
    return Number(this.int64(name, 0n))
  }

  /** A non-empty array of known scopes, each once, returned in catalogue order. */
  scopes (name: string): Scope[] {
    const v = this.get(name)
    const list = Array.isArray(v) ? v as unknown[] : []
    const known = list.filter((s): s is Scope => typeof s === 'string' && isScope(s))
    if (list.length === 0 || known.length !== list.length || new Set(known).size !== known.length) {
      throw this.error(`${this.what} field '${name}' must be a non-empty array of distinct scopes among ${ALL_SCOPES.join(', ')}`)
    }
    return ALL_SCOPES.filter(s => known.includes(s))
  }

  time (name: string, nullable: boolean): number | null {
    const v = this.get(name)
    if (v === null && nullable) return null
    const ms = typeof v === 'string' && ISO.test(v) ? Date.parse(v) : NaN
    if (Number.isNaN(ms)) throw this.error(`${this.what} field '${name}' must be a UTC time like 2026-01-31T12:00:00.000Z${nullable ? ' or null' : ''}`)
    return ms
  }
}

function petName (s: string): string | undefined {
  let length = 0
  for (const _ of s) length++ // code points, as the API counts them
  if (length < 1 || length > NAME_MAX_LENGTH) return `must be 1 to ${NAME_MAX_LENGTH} characters long`
  if (!/\S/u.test(s)) return 'must not be blank'
  if (/\p{Cs}/u.test(s)) return 'must be well-formed Unicode (no lone surrogates)'
  return undefined
}

// PostgreSQL text cannot hold U+0000; `petstore keys create` never makes such a name.
const keyName = (s: string) => s.trim() === '' || s.length > 100 || s.includes('\u0000') ? 'must be 1 to 100 characters, not blank, without U+0000' : undefined

export function parseHeader (line: Line): Header {
  const o = object(line)
  if (o.format !== FORMAT) throw new TransferLineError(line.no, `not a petstore export (the first line must be a header with "format":"${FORMAT}")`)
  const version = typeof o.version === 'bigint' && READABLE_VERSIONS.includes(Number(o.version)) ? Number(o.version) : undefined
  if (version === undefined) {
    throw new TransferLineError(line.no, `format version ${String(o.version)} is not supported (this petstore reads versions ${READABLE_VERSIONS.join(' and ')})`)
  }
  const f = new Fields(o, line.no, 'the header', ['format', 'version', 'source', 'exportedAt', 'counts'])
  const source = f.string('source', s => s === 'sqlite' || s === 'postgres' ? undefined : 'must be sqlite or postgres') as Header['source']
  const exportedAt = new Date(f.time('exportedAt', false)!).toISOString()
  const c = o.counts
  if (c === null || typeof c !== 'object' || Array.isArray(c)) throw f.error('the header field \'counts\' must be an object')
  const cf = new Fields(c as Json, line.no, 'the header\'s counts', COUNT_NAMES)
  const counts = { settings: cf.count('settings'), apiKeys: cf.count('apiKeys'), pets: cf.count('pets'), idempotencyKeys: cf.count('idempotencyKeys') }
  return { format: FORMAT, version, source, exportedAt, counts }
}

function parseRecord (line: Line, o: Json, version: number): DataRecord {
  const type = o.type
  switch (type) {
    case 'setting': {
      const f = new Fields(o, line.no, 'setting', ['type', 'name', 'value'])
      return { type, name: f.string('name', s => s === '' ? 'must not be empty' : undefined), value: f.string('value') }
    }
    case 'apiKey': {
      // Version 1 knew no scopes nor expiry: its keys could do everything, for ever.
      const v1 = version === 1
      const f = new Fields(o, line.no, 'apiKey', v1
        ? ['type', 'id', 'name', 'hash', 'createdAt', 'lastUsedAt', 'revokedAt']
        : ['type', 'id', 'name', 'hash', 'scopes', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt'])
      return {
        type,
        id: f.keyId('id'),
        name: f.string('name', keyName),
        hash: f.string('hash', s => HASH.test(s) ? undefined : 'must be a SHA-256 hash in 64 lowercase hex digits'),
        scopes: v1 ? [...ALL_SCOPES] : f.scopes('scopes'),
        createdAt: f.time('createdAt', false)!,
        expiresAt: v1 ? null : f.time('expiresAt', true),
        lastUsedAt: f.time('lastUsedAt', true),
        revokedAt: f.time('revokedAt', true)
      }
    }
    case 'pet': {
      const f = new Fields(o, line.no, 'pet', ['type', 'id', 'name', 'categoryId', 'status'])
      return {
        type,
        id: f.int64('id'),
        name: f.string('name', petName),
        categoryId: f.int64('categoryId'),
        status: f.string('status', s => STATUS_SET.has(s) ? undefined : `must be one of ${PET_STATUSES.join(', ')}`) as PetStatus
      }
    }
    case 'idempotencyKey': {
      const f = new Fields(o, line.no, 'idempotencyKey', ['type', 'apiKeyId', 'key', 'fingerprint', 'petId', 'createdAt'])
      return {
        type,
        apiKeyId: f.keyId('apiKeyId'),
        key: f.string('key', s => IDEM_KEY.test(s) ? undefined : 'must be 1 to 255 printable ASCII characters without spaces'),
        fingerprint: f.string('fingerprint', s => HASH.test(s) ? undefined : 'must be a SHA-256 hash in 64 lowercase hex digits'),
        petId: f.int64('petId'),
        createdAt: f.time('createdAt', false)!
      }
    }
    default:
      throw new TransferLineError(line.no, `unknown record type ${JSON.stringify(type)} (expected setting, apiKey, pet, idempotencyKey or end)`)
  }
}

export interface ParsedFile {
  header: Header
  /** Every data record, checked, in file order; throws TransferLineError at the first bad line. */
  records: AsyncGenerator<DataRecord & { line: number }>
  /** After `records` is exhausted: the verified pets checksum. */
  petsSha256: () => string
}

/**
 * Reads the header, then yields each checked record. The generator ends normally only after the
 * end line was read, the counts matched the header and the pets checksum matched the end line.
 */
export async function parseExport (lines: AsyncIterator<Line>): Promise<ParsedFile> {
  const first = await lines.next()
  if (first.done === true) throw new TransferLineError(1, 'the file is empty (expected the export header)')
  const header = parseHeader(first.value)
  let verified: string | undefined
  async function * records (): AsyncGenerator<DataRecord & { line: number }> {
    const seen: Counts = { settings: 0, apiKeys: 0, pets: 0, idempotencyKeys: 0 }
    const digest = new PetDigest()
    let section = 0
    let lastPetId: bigint | undefined
    let lastNo = first.value.no
    for (let next = await lines.next(); next.done !== true; next = await lines.next()) {
      const line = next.value
      lastNo = line.no
      const o = object(line)
      if (o.type === 'end') {
        const f = new Fields(o, line.no, 'the end line', ['type', 'petsSha256'])
        const expected = f.string('petsSha256', s => HASH.test(s) ? undefined : 'must be a SHA-256 hash in 64 lowercase hex digits')
        for (const name of COUNT_NAMES) {
          if (seen[name] !== header.counts[name]) {
            throw f.error(`the file holds ${seen[name]} ${name} records but its header announces ${header.counts[name]}`)
          }
        }
        const actual = digest.hex()
        if (actual !== expected) throw f.error(`the pets checksum is ${actual}, not ${expected} as the end line says: the file was altered`)
        const after = await lines.next()
        if (after.done !== true) throw new TransferLineError(after.value.no, 'nothing may follow the end line')
        verified = actual
        return
      }
      const record = parseRecord(line, o, header.version)
      const s = SECTION[record.type]
      if (s < section) {
        throw new TransferLineError(line.no, `a ${record.type} record after the ${SECTION_NAMES[section]} records (the order is setting, apiKey, pet, idempotencyKey)`)
      }
      section = s
      const count = COUNT_OF[record.type]
      if (++seen[count] > header.counts[count]) {
        throw new TransferLineError(line.no, `more ${count} records than the header announces (${header.counts[count]})`)
      }
      if (record.type === 'pet') {
        if (lastPetId !== undefined && record.id <= lastPetId) throw new TransferLineError(line.no, `pet id ${record.id} is not greater than the previous pet's id ${lastPetId} (pets come in ascending id order)`)
        lastPetId = record.id
        digest.add(record)
      }
      yield Object.assign(record, { line: line.no })
    }
    throw new TransferLineError(lastNo + 1, 'the file ends without its end line: it is truncated')
  }
  return {
    header,
    records: records(),
    petsSha256: () => {
      if (verified === undefined) throw new Error('the export file was not read to its end')
      return verified
    }
  }
}
