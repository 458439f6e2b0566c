/*
 * Helpers for the backup / export / import / copy tests: raw SQL on either store (behind the
 * service's back, to plant what the API cannot make, such as a pet at an int64 edge id), and export
 * files built record by record.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import pg from 'pg'
import {
  type Counts, type DataRecord, endLine, FORMAT, FORMAT_VERSION, headerLine, PetDigest, recordLine
} from '../../src/services/transfer/format.js'
import { ALL_SCOPES } from '../../src/schemas/scopes.js'

/** Runs statements on the database a DATABASE_URL names (SQLite file or PostgreSQL), then closes it. */
export async function withDb<T> (url: string, fn: (sql: (text: string, values?: unknown[]) => Promise<Array<Record<string, unknown>>>) => Promise<T>): Promise<T> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length))
    db.defaultSafeIntegers(true)
    try {
      return await fn(async (text, values = []) => {
        const stmt = db.prepare(text.replace(/\$\d+(::\w+)?/g, '?'))
        return stmt.reader ? stmt.all(...values) as Array<Record<string, unknown>> : (stmt.run(...values), [])
      })
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn(async (text, values = []) => (await client.query(text, values)).rows)
  } finally {
    await client.end()
  }
}

/** Inserts a pet with a chosen id straight into the store (the API assigns ids itself). */
export async function plantPet (url: string, p: { id: bigint, name: string, categoryId: bigint, status: string }): Promise<void> {
  await withDb(url, async (sql) => {
    if (url.startsWith('sqlite:')) await sql('INSERT INTO pets (id, name, category_id, status) VALUES (?, ?, ?, ?)', [p.id, p.name, p.categoryId, p.status])
    else await sql('INSERT INTO pets (id, name, category_id, status) OVERRIDING SYSTEM VALUE VALUES ($1::int8, $2, $3::int8, $4)', [p.id.toString(), Buffer.from(p.name, 'utf8'), p.categoryId.toString(), p.status])
  })
}

/** How many rows each table holds, read straight from the database. */
export async function tableCounts (url: string): Promise<Record<string, number>> {
  return await withDb(url, async (sql) => {
    const out: Record<string, number> = {}
    for (const t of ['settings', 'api_keys', 'pets', 'idempotency_keys']) {
      const rows = await sql(`SELECT count(*) AS n FROM ${t}`).catch(() => [{ n: 0 }])
      out[t] = Number(rows[0]!.n)
    }
    return out
  })
}

/** The lines of a well-formed export file holding `records` (header counts and end checksum computed). */
export function exportLines (records: DataRecord[], source: 'sqlite' | 'postgres' = 'sqlite'): string[] {
  const counts: Counts = { settings: 0, apiKeys: 0, pets: 0, idempotencyKeys: 0 }
  const digest = new PetDigest()
  for (const r of records) {
    counts[({ setting: 'settings', apiKey: 'apiKeys', pet: 'pets', idempotencyKey: 'idempotencyKeys' } as const)[r.type]]++
    if (r.type === 'pet') digest.add(r)
  }
  return [
    headerLine({ format: FORMAT, version: FORMAT_VERSION, source, exportedAt: '2026-11-01T00:00:00.000Z', counts }),
    ...records.map(recordLine),
    endLine({ type: 'end', petsSha256: digest.hex() })
  ]
}

export function writeLines (path: string, lines: string[]): string {
  writeFileSync(path, lines.map(l => l + '\n').join(''))
  return path
}

const HASH = (n: number) => n.toString(16).padStart(64, '0')

/** A sample store's records: settings, keys (one read-only with an expiry, one revoked), `pets` pets from id 1, an Idempotency-Key. */
export function sampleRecords (pets: number, opts: { keyIds?: number[], firstPetId?: bigint, cursorKey?: string } = {}): DataRecord[] {
  const keyIds = opts.keyIds ?? [1, 2]
  const first = opts.firstPetId ?? 1n
  const statuses = ['available', 'pending', 'sold'] as const
  const now = Date.now()
  return [
    { type: 'setting', name: 'cursor_hmac_key', value: opts.cursorKey ?? 'ab'.repeat(32) },
    // The first key reads only and expires in a day; the second holds every scope and is revoked.
    ...keyIds.map((id, i) => ({
      type: 'apiKey' as const,
      id,
      name: `key ${id}`,
      hash: HASH(id),
      scopes: i === 0 ? ['pets:read' as const] : [...ALL_SCOPES],
      createdAt: now - 1000,
      expiresAt: i === 0 ? now + 86_400_000 : null,
      lastUsedAt: null,
      revokedAt: i === 1 ? now : null
    })),
    ...Array.from({ length: pets }, (_, i) => ({ type: 'pet' as const, id: first + BigInt(i), name: `pet ${i}`, categoryId: BigInt(i % 7) - 3n, status: statuses[i % 3]! })),
    { type: 'idempotencyKey', apiKeyId: keyIds[0]!, key: 'idem-1', fingerprint: HASH(99), petId: first, createdAt: now }
  ]
}

/** stderr after the CLI's `petstore: store: …` line (and copy's `petstore: target: …`), which must be there. */
export function afterStoreLines (stderr: string): string {
  const m = /^petstore: store: [^\n]+\n(petstore: target: [^\n]+\n)?/.exec(stderr)
  assert.ok(m !== null, `stderr starts with the store line: ${stderr}`)
  return stderr.slice(m[0].length)
}
