import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js'
import { isInteger, isSafeNumber, LosslessNumber, parse } from 'lossless-json'
import { type Static, type TSchema, Type } from 'typebox'
import { createRequestAjv, withInt64 } from '../../schemas/ajv.js'
import { rule } from '../../schemas/messages.js'
import { PetSchema } from '../../schemas/pets.js'
import { ALL_SCOPES, type Scope } from '../../schemas/scopes.js'
import {
  COUNT_NAMES, COUNT_OF, type Counts, type DataRecord, FORMAT, type Header, PetDigest, READABLE_VERSIONS, TransferLineError
} from './format.js'
import type { Line } from './lines.js'

/*
 * Reads an export file line by line and checks every line before it reaches a store: the header
 * (format, version, counts) and each record against its schema below, which reuses the API's rules
 * where a field has the same one; then, in code, what a schema of one line cannot say: the order of
 * the sections, ascending pet ids, the announced counts, and the end line's checksum.
 * Any problem is a TransferLineError naming the line.
 */

type Json = Record<string, any>
const SECTIONS = Object.keys(COUNT_OF) as Array<DataRecord['type']>

// Times as export writes them (toISOString); the format also refuses what Date.parse cannot read (month 13).
const UTC_TIME = 'utc-time'
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
// An annotation of our own: the rule in words, for the fields whose broken keyword alone would not say it well.
const RULE = 'x-rule'
const Time = Type.String({ format: UTC_TIME, [RULE]: 'must be a UTC time like 2026-01-31T12:00:00.000Z' })
const NullableTime = Type.Union([Time, Type.Null()], { [RULE]: 'must be a UTC time like 2026-01-31T12:00:00.000Z or null' })
const Hash = Type.String({ pattern: '^[0-9a-f]{64}$', [RULE]: 'must be a SHA-256 hash in 64 lowercase hex digits' })
// Store ids the CLI takes as JavaScript numbers.
const KeyId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })
const Count = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
// PostgreSQL text cannot hold U+0000; `petstore keys create` never makes such a name.
const KeyName = Type.String({ maxLength: 100, pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$', [RULE]: 'must be 1 to 100 characters, not blank, without U+0000' })
const IdempotencyKey = Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$', [RULE]: 'must be 1 to 255 printable ASCII characters without spaces' })
const Scopes = Type.Array(Type.Unsafe<Scope>({ type: 'string', enum: [...ALL_SCOPES] }), {
  minItems: 1, uniqueItems: true, [RULE]: `must be a non-empty array of distinct scopes among ${ALL_SCOPES.join(', ')}`
})

const closed = { additionalProperties: false } as const
const ApiKeyLine = Type.Object({
  type: Type.Literal('apiKey'),
  id: KeyId,
  name: KeyName,
  hash: Hash,
  scopes: Scopes,
  createdAt: Time,
  expiresAt: NullableTime,
  lastUsedAt: NullableTime,
  revokedAt: NullableTime
}, closed)

/** Each kind of line: its schema, and its name in a problem. */
const check = {
  header: checker('the header', Type.Object({
    format: Type.Literal(FORMAT),
    version: Type.Integer(),
    source: Type.Unsafe<Header['source']>({ type: 'string', enum: ['sqlite', 'postgres'] }),
    exportedAt: Time,
    counts: Type.Object({ settings: Count, apiKeys: Count, pets: Count, idempotencyKeys: Count }, closed)
  }, closed)),
  setting: checker('setting', Type.Object({ type: Type.Literal('setting'), name: Type.String({ minLength: 1 }), value: Type.String() }, closed)),
  apiKey: checker('apiKey', ApiKeyLine),
  // Version 1 knew no scopes nor expiry: its keys could do everything, for ever.
  apiKeyV1: checker('apiKey', Type.Omit(ApiKeyLine, ['scopes', 'expiresAt'], closed)),
  pet: checker('pet', Type.Object({ type: Type.Literal('pet'), ...PetSchema.properties }, closed)),
  idempotencyKey: checker('idempotencyKey', Type.Object({
    type: Type.Literal('idempotencyKey'),
    apiKeyId: KeyId,
    key: IdempotencyKey,
    fingerprint: Hash,
    petId: PetSchema.properties.id,
    createdAt: Time
  }, closed)),
  end: checker('the end line', Type.Object({ type: Type.Literal('end'), petsSha256: Hash }, closed))
}

let ajv: ReturnType<typeof createRequestAjv> | undefined

/** The first broken rule of a line, in words: the field (a dotted path) and what it must be. */
function problem (what: string, schema: TSchema, e: ErrorObject): string {
  const path = e.instancePath.split('/').slice(1)
  if (e.keyword === 'required') return `${what} lacks the field '${[...path, e.params.missingProperty].join('.')}'`
  if (e.keyword === 'additionalProperties') {
    const allowed = Object.keys((e.parentSchema as Json).properties).join(', ')
    return `${what} has an unknown field '${[...path, e.params.additionalProperty].join('.')}' (allowed: ${allowed})`
  }
  // The words of the outermost schema on the path that has some (the scope list, not the scope).
  let s: Json | undefined = schema
  for (const [i, key] of path.entries()) {
    s = s?.properties?.[key] ?? s?.items
    if (s?.[RULE] !== undefined) return `${what} field '${path.slice(0, i + 1).join('.')}' ${String(s[RULE])}`
  }
  return `${what} field '${path.join('.')}' ${rule(e, e.parentSchema as Json)}`
}

/** A check of one kind of line against `schema`, by the project's Ajv (int64 exact), compiled at first use. */
function checker<T extends TSchema> (what: string, schema: T): (line: Line, o: Json) => Static<T> {
  let validate: ValidateFunction | undefined
  return (line, o) => {
    ajv ??= createRequestAjv().addKeyword(RULE)
      .addFormat(UTC_TIME, { type: 'string', validate: (s: string) => ISO.test(s) && !Number.isNaN(Date.parse(s)) })
    validate ??= ajv.compile(withInt64(schema))
    if (validate(o)) return o as Static<T>
    throw new TransferLineError(line.no, problem(what, schema, validate.errors![0]!))
  }
}

/**
 * Integers as numbers, BigInt past 2^53 (exact either way; the int64 keyword takes both). Any other
 * spelling (1.5, 1e3) stays a LosslessNumber, which no field takes: the export writes none.
 */
const parseNumber = (text: string) => !isInteger(text) ? new LosslessNumber(text) : isSafeNumber(text) ? Number(text) : BigInt(text)

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

const time = (s: string | null) => s === null ? null : Date.parse(s)

function parseHeader (line: Line): Header {
  const o = object(line)
  if (o.format !== FORMAT) throw new TransferLineError(line.no, `not a petstore export (the first line must be a header with "format":"${FORMAT}")`)
  if (!READABLE_VERSIONS.includes(o.version)) {
    throw new TransferLineError(line.no, `format version ${String(o.version)} is not supported (this petstore reads versions ${READABLE_VERSIONS.join(' and ')})`)
  }
  return check.header(line, o)
}

function parseRecord (line: Line, o: Json, version: number): DataRecord {
  switch (o.type) {
    case 'setting': return check.setting(line, o)
    case 'apiKey': {
      const k = version === 1 ? { ...check.apiKeyV1(line, o), scopes: ALL_SCOPES, expiresAt: null } : check.apiKey(line, o)
      return {
        ...k,
        scopes: ALL_SCOPES.filter(s => k.scopes.includes(s)),
        createdAt: Date.parse(k.createdAt),
        expiresAt: time(k.expiresAt),
        lastUsedAt: time(k.lastUsedAt),
        revokedAt: time(k.revokedAt)
      }
    }
    case 'pet': return check.pet(line, o)
    case 'idempotencyKey': {
      const k = check.idempotencyKey(line, o)
      return { ...k, createdAt: Date.parse(k.createdAt) }
    }
    default:
      throw new TransferLineError(line.no, `unknown record type ${JSON.stringify(o.type)} (expected setting, apiKey, pet, idempotencyKey or end)`)
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
export async function parseExport (lines: AsyncGenerator<Line>): Promise<ParsedFile> {
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
    for await (const line of lines) {
      lastNo = line.no
      const o = object(line)
      if (o.type === 'end') {
        const expected = check.end(line, o).petsSha256
        for (const name of COUNT_NAMES) {
          if (seen[name] !== header.counts[name]) {
            throw new TransferLineError(line.no, `the file holds ${seen[name]} ${name} records but its header announces ${header.counts[name]}`)
          }
        }
        const actual = digest.hex()
        if (actual !== expected) throw new TransferLineError(line.no, `the pets checksum is ${actual}, not ${expected} as the end line says: the file was altered`)
        const after = await lines.next()
        if (after.done !== true) throw new TransferLineError(after.value.no, 'nothing may follow the end line')
        verified = actual
        return
      }
      const record = parseRecord(line, o, header.version)
      const s = SECTIONS.indexOf(record.type)
      if (s < section) {
        throw new TransferLineError(line.no, `a ${record.type} record after the ${SECTIONS[section]} records (the order is ${SECTIONS.join(', ')})`)
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
