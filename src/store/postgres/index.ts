import type { NewPet, Pet } from '../../schemas/pets.js'
import { type CreateItem, type CreateOutcome, PetCreates, runCreateBatchAsync } from '../creates.js'
import { type IdemRow, type KeyRefRow, type KeyRow, pageAfter, type PetRow, toApiKey, toIdemRecord, toKeyRef, toPet } from '../rows.js'
import type { ApiKeyRecord, IdempotencyKey, IdempotentCreateResult, ListPetsParams, NamingStopped, PoolStats, Store } from '../store.js'
import { StoreUnavailableError } from '../../errors.js'
import { createMigrationClient, PgDatabase, type PgConnectionOptions } from './connection.js'
import { migratePostgres } from './migrations.js'
import { PgSettingError, startFailure } from './start-failure.js'

/**
 * Transaction-level advisory lock every pet insert takes before drawing ids. Sequence values are
 * handed out before commit, so without it a transaction holding id 7 could commit after another
 * holding id 8 had committed and been paged past: a list walk would miss 7. Under the lock, inserts
 * (across every instance) draw ids and commit one batch at a time, in id order; the lock is released
 * only after the commit is visible. Group commit keeps the serialization cheap: one batch per instance.
 */
export const PET_INSERT_LOCK_KEY = 7_365_020_100_000_002n

/**
 * The settings a pet insert's durability and bound rest on, set by the insert statement itself
 * (set_config(…, true): scoped to its transaction, so they hold whichever server connection a
 * pooler picks and leak to no other client), evaluated before the lock is asked for:
 * - synchronous_commit=on: the statement's commit (at its end: it runs in an implicit transaction of
 *   its own) flushes its WAL before the server answers, whatever the server or role default;
 * - lock_timeout: a batch waiting longer than PG_STATEMENT_TIMEOUT_MS for the insert lock gives up
 *   (55P03, a 503), with nothing written. It is read when a wait begins, so it bounds this
 *   statement's own wait — which statement_timeout, armed when a statement starts, would not.
 * checkSettings reads them back through the same expression at start-up.
 */
export const INSERT_SETTINGS = "SELECT set_config('synchronous_commit', 'on', true) AS sc, set_config('lock_timeout', $1::text, true) AS lt"

/*
 * The insert while statements are named (PG_PREPARED_STATEMENTS on, or auto before a pooler
 * showed: direct connections). One statement and one round trip per batch, in an implicit
 * transaction: the settings, then the lock in a CTE joined into the insert's source, then the
 * insert, then (at the end of the statement)
 * the commit — so the lock is held for no client round trip, and the answer comes once the commit is
 * durable. The ORDER BY makes the source a Sort, which consumes all its input (the lock included)
 * before emitting a row, and PostgreSQL evaluates the volatile id default after that sort, in `ord`
 * order. So ids are drawn only under the lock, ascending in the order of the batch. A statement the
 * server refuses (a pooler's missing named statement included) writes nothing, so it can be retried.
 * Measured against BEGIN; SET LOCAL ×3; INSERT; COMMIT pipelined (docs/performance.md, "What a
 * PostgreSQL create costs"): one statement instead of six for the server, one query for the client.
 */
const INSERT_PETS = `
  WITH s AS MATERIALIZED (${INSERT_SETTINGS.replace('$1', '$5')}),
  l AS MATERIALIZED (SELECT pg_advisory_xact_lock($4::int8) FROM s)
  INSERT INTO pets (name, category_id, status)
  SELECT t.name, t.category_id, t.status
  FROM l, unnest($1::bytea[], $2::int8[], $3::text[]) WITH ORDINALITY AS t(name, category_id, status, ord)
  ORDER BY t.ord
  RETURNING id`

/**
 * The first statement of a pet insert's message (PgDatabase.script): the settings its durability
 * and bound rest on, set with set_config(…, true) — scoped to the message's implicit transaction, so
 * they hold whichever server connection a pooler picks and leak to no other client:
 * - synchronous_commit=on: the commit (when the message's last statement ends) flushes its WAL
 *   before the server answers, whatever the server or role default;
 * - statement_timeout: the insert (its wait for the insert lock included) is cut by the server past
 *   PG_STATEMENT_TIMEOUT_MS (57014, a 503) and rolls back, writing nothing. The server arms a
 *   statement's timer when the statement starts, so the setting bounds the statement after this one
 *   (checkSettings makes sure it does, through whatever pooler).
 * One SELECT rather than two SET LOCALs: measured cheaper for the server.
 */
export function insertPrologue (statementTimeoutMs: number): string {
  return `SELECT set_config('synchronous_commit', 'on', true), set_config('statement_timeout', '${Math.trunc(statementTimeoutMs)}', true)`
}

const STATUSES: ReadonlySet<string> = new Set(['available', 'pending', 'sold'])

/** `\x` (bytea's hex input) inside a quoted array element (`\\x`) inside an E'' string (`\\\\x`). */
const HEX_ELEMENT = '\\\\\\\\x'

/**
 * The batch as the insert function's arguments, written as SQL literals (the simple protocol takes
 * no parameters; see insertPets). Each literal is built from a closed alphabet, checked here rather
 * than trusted from the caller: names as the hex of their UTF-8 bytes (an E'' string, so the
 * server's standard_conforming_strings does not matter), category ids as BigInt digits, statuses
 * from the three the schema allows. Hand-written because pg's escapeLiteral would quote what needs
 * no quoting, and nothing here can hold a quote.
 */
function insertArguments (pets: NewPet[]): string {
  let names = ''
  let categoryIds = ''
  let statuses = ''
  for (const p of pets) {
    if (typeof p.categoryId !== 'bigint') throw new TypeError('categoryId must be a BigInt')
    if (!STATUSES.has(p.status)) throw new TypeError(`unknown status ${String(p.status)}`)
    const sep = names === '' ? '' : ','
    names += `${sep}"${HEX_ELEMENT}${Buffer.from(p.name, 'utf8').toString('hex')}"`
    categoryIds += `${sep}${p.categoryId.toString()}`
    statuses += `${sep}${p.status}`
  }
  return `E'{${names}}'::bytea[], '{${categoryIds}}'::int8[], '{${statuses}}'::text[], ${PET_INSERT_LOCK_KEY.toString()}`
}

/** The whole message of a pet insert (insertPets): `prologue` is insertPrologue(PG_STATEMENT_TIMEOUT_MS). */
export function insertMessage (prologue: string, pets: NewPet[]): string {
  return `${prologue}; SELECT array_to_string(petstore_insert_pets(${insertArguments(pets)}), ',') AS ids`
}

/**
 * The reads behind a read-cache miss. Each is served by an index in key order, with no sort and no
 * sequential scan, at any table size (test/store/postgres-plans.test.ts; EXPLAIN ANALYZE over 1M
 * pets in docs/performance.md): get by the primary key; a page by the primary key's range; a
 * filtered page by (status, id), or the primary key's range with the filter when the status is
 * common enough — the planner chooses by the value, which is why that one is never a named
 * statement in auto mode (connection.ts).
 */
export const PET_READS = {
  get: 'SELECT id, name, category_id, status FROM pets WHERE id = $1::int8',
  page: 'SELECT id, name, category_id, status FROM pets WHERE id > $1::int8 ORDER BY id LIMIT $2',
  pageWithStatus: 'SELECT id, name, category_id, status FROM pets WHERE status = $3 AND id > $1::int8 ORDER BY id LIMIT $2'
} as const

export interface PostgresStoreOptions extends PgConnectionOptions {}

/** The shared store: many stateless instances over one PostgreSQL, through a connection pool. */
export class PostgresStore implements Store {
  readonly kind = 'postgres' as const
  private readonly creates: PetCreates
  private closed = false
  /** The first statement of every pet insert's message (insertPrologue). */
  private readonly prologue: string
  /** lock_timeout of a named pet insert (INSERT_SETTINGS), in ms as PostgreSQL reads it. */
  private readonly lockTimeout: string

  private constructor (private readonly db: PgDatabase, statementTimeoutMs: number) {
    this.prologue = insertPrologue(statementTimeoutMs)
    this.lockTimeout = String(Math.trunc(statementTimeoutMs))
    this.creates = new PetCreates(async (items) =>
      items.every(i => i.idem === undefined)
        ? await this.insertPets(items.map(i => i.pet))
        : await this.insertPetsIdempotent(items))
  }

  /** Connects, applies pending migrations and checks the settings the promises rest on. */
  static async open (opts: PostgresStoreOptions): Promise<PostgresStore> {
    await PostgresStore.migrate(opts)
    const db = new PgDatabase(opts)
    try {
      await checkSettings(db, opts.statementTimeoutMs)
    } catch (err) {
      await db.end()
      throw startFailure(err, opts.url, opts.connectTimeoutMs)
    }
    return new PostgresStore(db, opts.statementTimeoutMs)
  }

  /**
   * Applies pending migrations (serialized across instances) and returns their versions. A failure
   * is a StoreUnavailableError whose message names the cause and the setting to look at.
   */
  static async migrate (opts: PostgresStoreOptions): Promise<number[]> {
    const client = createMigrationClient(opts)
    try {
      await client.connect()
      return await migratePostgres(client)
    } catch (err) {
      throw startFailure(err, opts.url, opts.connectTimeoutMs)
    } finally {
      await client.end().catch(() => {})
    }
  }

  /**
   * A batch without Idempotency-Keys, in one round trip and its own implicit transaction, either way
   * committed (WAL flushed) before the server answers, the lock released only after the commit is
   * visible (the read cache's ordering argument, pet-reads.ts), ids drawn under the lock in batch order:
   * - while statements are named (direct connections): INSERT_PETS, named, planned once per
   *   connection. Measured cheapest there (docs/performance.md, "The insert function"), but a
   *   statement cannot arm its own statement_timeout: its lock wait is bounded by lock_timeout, any
   *   other stall only by the client's bound (README, idempotent creates);
   * - once they are not (behind a transaction-mode pooler, or PG_PREPARED_STATEMENTS=off): one
   *   simple-protocol message, insertPrologue then the insert function (migration 3), whose plan the
   *   server keeps per connection whatever the pooler, and which the server's statement_timeout bounds.
   * A statement the server refuses or cuts writes nothing, so the named one is retried unnamed when
   * a pooler shows (PgDatabase.query).
   */
  private async insertPets (pets: NewPet[]): Promise<bigint[]> {
    if (!this.db.namedReads) {
      const res = await this.db.script<{ ids: string }>(insertMessage(this.prologue, pets))
      // One row: the ids, ascending (array_agg … ORDER BY id in the function), as decimal digits.
      return res.rows[0]!.ids.split(',').map(BigInt)
    }
    const res = await this.db.query<{ id: bigint }>({
      name: 'insert_pets',
      stablePlan: true,
      text: INSERT_PETS,
      values: [
        pets.map(p => Buffer.from(p.name, 'utf8')),
        pets.map(p => p.categoryId.toString()),
        pets.map(p => p.status),
        PET_INSERT_LOCK_KEY.toString(),
        this.lockTimeout
      ]
    })
    // Ids were drawn ascending in batch order (see INSERT_PETS); RETURNING's row order is not promised.
    return res.rows.map(r => r.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  }

  /**
   * A batch holding Idempotency-Keys: one transaction under the same insert lock, item by item (see
   * creates.ts). The lock serializes every pet insert on every instance, so the lookup sees any
   * record committed by an earlier holder: two instances racing with one key create one pet, and
   * the later replays it.
   */
  private async insertPetsIdempotent (items: CreateItem[]): Promise<CreateOutcome[]> {
    return await this.db.interactive(async (query) => {
      await query({ text: 'SELECT pg_advisory_xact_lock($1::int8)', values: [PET_INSERT_LOCK_KEY.toString()] })
      return await runCreateBatchAsync(items, {
        findKey: async (idem) => {
          const found = await query<IdemRow>({
            name: 'find_idem',
            text: `SELECT i.fingerprint, i.created_at, p.id, p.name, p.category_id, p.status
                   FROM idempotency_keys i JOIN pets p ON p.id = i.pet_id WHERE i.api_key_id = $1 AND i.key = $2`,
            values: [idem.apiKeyId, idem.key]
          })
          const row = found.rows[0]
          return row === undefined ? undefined : toIdemRecord(row)
        },
        dropKey: async (idem) => { await query({ text: 'DELETE FROM idempotency_keys WHERE api_key_id = $1 AND key = $2', values: [idem.apiKeyId, idem.key] }) },
        insertPet: async (pet) => (await query<{ id: bigint }>({
          name: 'insert_pet',
          text: 'INSERT INTO pets (name, category_id, status) VALUES ($1, $2::int8, $3) RETURNING id',
          values: [Buffer.from(pet.name, 'utf8'), pet.categoryId.toString(), pet.status]
        })).rows[0]!.id,
        recordKey: async (idem, petId) => {
          await query({
            text: 'INSERT INTO idempotency_keys (api_key_id, key, fingerprint, pet_id, created_at) VALUES ($1, $2, $3, $4::int8, $5)',
            values: [idem.apiKeyId, idem.key, idem.fingerprint, petId.toString(), idem.now]
          })
        }
      })
    })
  }

  async createPet (pet: NewPet): Promise<Pet> {
    return await this.creates.create(pet)
  }

  async createPetIdempotent (pet: NewPet, idem: IdempotencyKey): Promise<IdempotentCreateResult> {
    return await this.creates.createIdempotent(pet, idem)
  }

  async purgeIdempotencyKeys (before: Date): Promise<number> {
    const [res] = await this.db.transaction([{ text: 'DELETE FROM idempotency_keys WHERE created_at < $1', values: [before] }])
    return res!.rowCount ?? 0
  }

  poolStats (): PoolStats {
    const pool = this.db.pool
    return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }
  }

  namedStatements (): boolean {
    return this.db.namedReads
  }

  onNamingStopped (fn: (e: NamingStopped) => void): void {
    this.db.onNamingStopped(fn)
  }

  async getPet (id: bigint): Promise<Pet | undefined> {
    const res = await this.db.query<PetRow>({
      name: 'get_pet',
      stablePlan: true,
      text: PET_READS.get,
      values: [id.toString()]
    })
    const row = res.rows[0]
    return row === undefined ? undefined : toPet(row)
  }

  async listPets (params: ListPetsParams): Promise<Pet[]> {
    const { limit, status } = params
    const after = pageAfter(params).toString()
    const res = await this.db.query<PetRow>(status === undefined
      ? { name: 'list_pets', stablePlan: true, text: PET_READS.page, values: [after, limit] }
      : { name: 'list_pets_status', text: PET_READS.pageWithStatus, values: [after, limit, status] })
    return res.rows.map(toPet)
  }

  async createApiKey (key: { name: string, hash: string, createdAt: Date }): Promise<ApiKeyRecord> {
    const [res] = await this.db.transaction([{
      text: 'INSERT INTO api_keys (name, key_hash, created_at) VALUES ($1, $2, $3) RETURNING id, name, created_at, last_used_at, revoked_at',
      values: [key.name, key.hash, key.createdAt]
    }])
    return toApiKey(res!.rows[0] as KeyRow)
  }

  async findApiKeyByHash (hash: string): Promise<{ id: number, revoked: boolean } | undefined> {
    const res = await this.db.query<KeyRefRow>({
      name: 'find_key',
      stablePlan: true,
      text: 'SELECT id, revoked_at FROM api_keys WHERE key_hash = $1',
      values: [hash]
    })
    const row = res.rows[0]
    return row === undefined ? undefined : toKeyRef(row)
  }

  async listApiKeys (): Promise<ApiKeyRecord[]> {
    const res = await this.db.query<KeyRow>({ text: 'SELECT id, name, created_at, last_used_at, revoked_at FROM api_keys ORDER BY id' })
    return res.rows.map(toApiKey)
  }

  async revokeApiKey (id: number, at: Date): Promise<boolean> {
    const [res] = await this.db.transaction([{ text: 'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2', values: [at, id] }])
    return (res!.rowCount ?? 0) > 0
  }

  async touchApiKeys (usedAt: Map<number, Date>): Promise<void> {
    if (usedAt.size === 0) return
    const ids = [...usedAt.keys()]
    const ats = [...usedAt.values()]
    await this.db.transaction([{
      text: `UPDATE api_keys AS k SET last_used_at = u.at
             FROM unnest($1::int8[], $2::timestamptz[]) AS u(id, at)
             WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`,
      values: [ids, ats]
    }])
  }

  async countApiKeys (): Promise<number> {
    const res = await this.db.query<{ n: bigint }>({ text: 'SELECT count(*) AS n FROM api_keys' })
    return Number(res.rows[0]!.n)
  }

  async getOrCreateSetting (name: string, create: () => string): Promise<string> {
    // Two transactions: the SELECT takes a fresh snapshot, so it sees the row another instance
    // inserted concurrently (which made our INSERT do nothing).
    await this.db.transaction([{ text: 'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', values: [name, create()] }])
    const res = await this.db.query<{ value: string }>({ text: 'SELECT value FROM settings WHERE name = $1', values: [name] })
    return res.rows[0]!.value
  }

  async ping (): Promise<void> {
    await this.db.query({ text: 'SELECT 1' })
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.creates.drain()
    await this.db.end()
  }
}

/**
 * Reads back what the durability and int64 promises rest on, as the writes set them (so through
 * whatever pooler is in between): inside a transaction begun as every write transaction is, and
 * inside a message that sets them as a pet insert does (insertPrologue) — including that the
 * statement_timeout it sets cuts the statement after it; refuses to start otherwise.
 */
async function checkSettings (db: PgDatabase, statementTimeoutMs: number): Promise<void> {
  const [res] = await db.transaction([{
    text: "SELECT current_setting('synchronous_commit') AS sc, current_setting('fsync') AS fsync, 9223372036854775807::int8 AS big"
  }])
  const row = res!.rows[0] as { sc: string, fsync: string, big: bigint }
  if (row.sc !== 'on') throw new PgSettingError(`synchronous_commit is ${row.sc} inside a transaction, so a 201 would not mean committed to disk`, 'that nothing between the service and the server rewrites SET LOCAL')
  if (row.fsync !== 'on') throw new PgSettingError('the server runs with fsync off, so a 201 would not mean committed to disk', 'fsync in the server\'s postgresql.conf')
  if (row.big !== 9223372036854775807n) throw new PgSettingError('int8 values are not parsed to exact BigInts', 'the pg type parsers (a bug: report it)')
  const named = await db.query<{ sc: string }>({
    text: `WITH s AS MATERIALIZED (${INSERT_SETTINGS}) SELECT current_setting('synchronous_commit') AS sc FROM s`,
    values: [String(Math.trunc(statementTimeoutMs))]
  })
  if (named.rows[0]!.sc !== 'on') throw new PgSettingError(`synchronous_commit is ${named.rows[0]!.sc} inside a pet insert, so a 201 would not mean committed to disk`, 'that nothing between the service and the server rewrites set_config')
  const insert = await db.script<{ sc: string }>(`${insertPrologue(statementTimeoutMs)}; SELECT current_setting('synchronous_commit') AS sc`)
  const sc = insert.rows[0]!.sc
  if (sc !== 'on') throw new PgSettingError(`synchronous_commit is ${sc} inside a pet insert, so a 201 would not mean committed to disk`, 'that nothing between the service and the server rewrites set_config')
  // A 1 ms bound set the way a pet insert sets its own must cut a 300 ms sleep after it (57014).
  const cut = await db.script(`${insertPrologue(1)}; SELECT pg_sleep(0.3)`).then(() => undefined, (err: unknown) => err)
  if (!(cut instanceof StoreUnavailableError && (cut.cause as { code?: unknown } | undefined)?.code === '57014')) {
    if (cut !== undefined) throw cut
    throw new PgSettingError('a statement_timeout set by one statement of a message does not bound the next one, so a stalled create would not be cut by the server', 'the server version (PostgreSQL 13 or later bounds each statement of a message)')
  }
}
