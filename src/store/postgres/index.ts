import type pg from 'pg'
import type { NewPet, Pet } from '../../schemas/pets.js'
import { type CreateItem, type CreateOutcome, createOutcomes, idempotencyKeys, keyOf, planCreates } from '../creates.js'
import { type KeysAndSettingsSql, SharedRepositories } from '../repositories.js'
import { type IdemRecord, type IdemRow, KEY_COLUMNS, KEY_GRANT_COLUMNS, type KeyGrantRow, type KeyRow, pageAfter, type PetRow, toIdemRecord, toPet } from '../rows.js'
import type { ListPetsParams, NamingStopped, PooledStore, StatementNaming, Store } from '../store.js'
import { createMigrationClient, PgDatabase, type PgConnectionOptions, type PgStatement } from './connection.js'
import { migratePostgres } from './migrations.js'
import { PgSettingError, startFailure } from './start-failure.js'

/**
 * Every pet insert takes this advisory lock before drawing ids, held until its commit is visible:
 * sequence values are handed out before commit, so without it a list walk could page past an id
 * that commits later. Ids thus become visible in order across every instance.
 */
export const PET_INSERT_LOCK_KEY = 7_365_020_100_000_002n

const INSERT_SETTINGS = "SELECT set_config('synchronous_commit', 'on', true), set_config('lock_timeout', $1::text, true)"

/**
 * One statement, alone or inside a batch's transaction. Its first CTE sets synchronous_commit and
 * lock_timeout for its transaction (set_config(…, true), as SET LOCAL in txPrologue) before the lock
 * is asked: lock_timeout bounds this statement's own wait for the lock, which statement_timeout
 * would not. The function (migration 3) draws ids only under the lock, ascending in the batch order.
 */
function insertPets (pets: NewPet[], statementTimeoutMs: number): PgStatement {
  return {
    name: 'insert_pets',
    stablePlan: true,
    text: `WITH s AS MATERIALIZED (${INSERT_SETTINGS.replace('$1', '$5')})
      SELECT unnest(petstore_insert_pets($1::bytea[], $2::int8[], $3::text[], $4::int8)) AS id FROM s`,
    values: [
      pets.map(p => Buffer.from(p.name, 'utf8')),
      pets.map(p => p.categoryId.toString()),
      pets.map(p => p.status),
      PET_INSERT_LOCK_KEY.toString(),
      String(Math.trunc(statementTimeoutMs))
    ]
  }
}

export const INSERT_IDEMPOTENCY_KEYS = `INSERT INTO idempotency_keys (api_key_id, key, fingerprint, pet_id, created_at)
  SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::int8[], $5::timestamptz[])`

const insertedIds = (res: { rows: unknown[] }): bigint[] => (res.rows as Array<{ id: bigint }>).map(r => r.id)

/**
 * Each read is served by an index in key order, without a sort (test/store/postgres-plans.test.ts).
 * The planner chooses the status page's plan by the value, so it is never named in auto mode.
 */
export const PET_READS = {
  get: 'SELECT id, name, category_id, status FROM pets WHERE id = $1::int8',
  page: 'SELECT id, name, category_id, status FROM pets WHERE id > $1::int8 ORDER BY id LIMIT $2',
  pageWithStatus: 'SELECT id, name, category_id, status FROM pets WHERE status = $3 AND id > $1::int8 ORDER BY id LIMIT $2'
} as const

export class PostgresStore extends SharedRepositories implements Store, PooledStore, StatementNaming {
  readonly kind = 'postgres' as const
  private closed = false

  protected readonly sql: KeysAndSettingsSql

  private constructor (private readonly db: PgDatabase, private readonly statementTimeoutMs: number) {
    super()
    this.sql = keysAndSettingsSql(db)
  }

  static async open (opts: PgConnectionOptions): Promise<PostgresStore> {
    await PostgresStore.migrate(opts)
    const db = new PgDatabase(opts)
    try {
      await checkSettings(db, opts.pgStatementTimeoutMs)
    } catch (err) {
      await db.end()
      throw startFailure(err, opts.url, opts.pgConnectTimeoutMs)
    }
    return new PostgresStore(db, opts.pgStatementTimeoutMs)
  }

  /** Serialized across instances; a failure's message names the cause and the setting to look at. */
  static async migrate (opts: PgConnectionOptions): Promise<number[]> {
    let client: pg.Client | undefined
    try {
      // pg reads the URL here (and any certificate file it names): a failure there is described too.
      client = createMigrationClient(opts)
      await client.connect()
      return await migratePostgres(client)
    } catch (err) {
      throw startFailure(err, opts.url, opts.pgConnectTimeoutMs)
    } finally {
      await client?.end().catch(() => {})
    }
  }

  /**
   * With Idempotency-Keys, the keys are looked up after the lock is taken, in a later statement whose
   * snapshot sees every record an earlier holder committed: racing instances create one pet.
   */
  protected async commitCreates (items: CreateItem[]): Promise<CreateOutcome[]> {
    const keys = idempotencyKeys(items)
    if (keys.length === 0) {
      const plan = planCreates(items, new Map())
      return createOutcomes(plan, insertedIds(await this.db.write(insertPets(plan.pets, this.statementTimeoutMs))))
    }
    return await this.db.interactive(async (query) => {
      const [, rows] = await Promise.all([
        query({ text: 'SELECT pg_advisory_xact_lock($1::int8)', values: [PET_INSERT_LOCK_KEY.toString()] }),
        query<IdemRow & { api_key_id: bigint, key: string }>({
          name: 'find_idem',
          text: `SELECT i.api_key_id, i.key, i.fingerprint, i.created_at, p.id, p.name, p.category_id, p.status
                 FROM unnest($1::int8[], $2::text[]) AS k(api_key_id, key)
                 JOIN idempotency_keys i ON i.api_key_id = k.api_key_id AND i.key = k.key
                 JOIN pets p ON p.id = i.pet_id`,
          values: [keys.map(k => k.apiKeyId), keys.map(k => k.key)]
        })
      ])
      const found = new Map<string, IdemRecord>(rows.rows.map(r => [keyOf({ apiKeyId: Number(r.api_key_id), key: r.key }), toIdemRecord(r)]))
      const plan = planCreates(items, found)
      if (plan.drop.length > 0) {
        await query({
          text: `DELETE FROM idempotency_keys i USING unnest($1::int8[], $2::text[]) AS k(api_key_id, key)
                 WHERE i.api_key_id = k.api_key_id AND i.key = k.key`,
          values: [plan.drop.map(k => k.apiKeyId), plan.drop.map(k => k.key)]
        })
      }
      const ids = plan.pets.length === 0 ? [] : insertedIds(await query(insertPets(plan.pets, this.statementTimeoutMs)))
      if (plan.record.length > 0) {
        await query({
          text: INSERT_IDEMPOTENCY_KEYS,
          values: [
            plan.record.map(r => r.idem.apiKeyId),
            plan.record.map(r => r.idem.key),
            plan.record.map(r => r.idem.fingerprint),
            plan.record.map(r => ids[r.pet]!.toString()),
            plan.record.map(r => r.idem.now)
          ]
        })
      }
      return createOutcomes(plan, ids)
    })
  }

  async purgeIdempotencyKeys (before: Date): Promise<number> {
    const [res] = await this.db.transaction([{ text: 'DELETE FROM idempotency_keys WHERE created_at < $1', values: [before] }])
    return res!.rowCount ?? 0
  }

  poolStats () {
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

  pageIsFinal (): boolean {
    return true
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

function keysAndSettingsSql (db: PgDatabase): KeysAndSettingsSql {
  return {
    insertKey: async (k) => {
      const [res] = await db.transaction([{
        text: `INSERT INTO api_keys (name, key_hash, scopes, created_at, expires_at) VALUES ($1, $2, $3, $4, $5) RETURNING ${KEY_COLUMNS}`,
        values: [k.name, k.hash, k.scopes, k.createdAt, k.expiresAt]
      }])
      return res!.rows[0] as KeyRow
    },
    keyByHash: async (hash) => {
      const res = await db.query<KeyGrantRow>({
        name: 'find_key_grant',
        stablePlan: true,
        text: `SELECT ${KEY_GRANT_COLUMNS} FROM api_keys WHERE key_hash = $1`,
        values: [hash]
      })
      return res.rows[0]
    },
    listKeys: async () => (await db.query<KeyRow>({ text: `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id` })).rows,
    revokeKey: async (id, at) => {
      // LEAST ignores NULL: a key not revoked yet takes `at`.
      const [res] = await db.transaction([{ text: 'UPDATE api_keys SET revoked_at = LEAST(revoked_at, $1) WHERE id = $2', values: [at, id] }])
      return res!.rowCount ?? 0
    },
    touchKeys: async (usedAt) => {
      await db.transaction([{
        text: `UPDATE api_keys AS k SET last_used_at = u.at
               FROM unnest($1::int8[], $2::timestamptz[]) AS u(id, at)
               WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`,
        values: [[...usedAt.keys()], [...usedAt.values()]]
      }])
    },
    countKeys: async () => (await db.query<{ n: bigint }>({ text: 'SELECT count(*) AS n FROM api_keys' })).rows[0]!.n,
    // The SELECT below is a transaction of its own, so it sees a row another instance inserted meanwhile.
    insertSettingIfAbsent: async (name, value) => {
      await db.transaction([{ text: 'INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', values: [name, value] }])
    },
    setting: async (name) => (await db.query<{ value: string }>({ text: 'SELECT value FROM settings WHERE name = $1', values: [name] })).rows[0]!.value
  }
}

/** Reads back, through whatever pooler is in between, what durability and int64 rest on; refuses to start otherwise. */
async function checkSettings (db: PgDatabase, statementTimeoutMs: number): Promise<void> {
  const [res] = await db.transaction([{
    text: "SELECT current_setting('synchronous_commit') AS sc, current_setting('fsync') AS fsync, 9223372036854775807::int8 AS big"
  }])
  const row = res!.rows[0] as { sc: string, fsync: string, big: bigint }
  if (row.sc !== 'on') throw new PgSettingError(`synchronous_commit is ${row.sc} inside a transaction, so a 201 would not mean committed to disk`, 'that nothing between the service and the server rewrites SET LOCAL')
  if (row.fsync !== 'on') throw new PgSettingError('the server runs with fsync off, so a 201 would not mean committed to disk', 'fsync in the server\'s postgresql.conf')
  if (row.big !== 9223372036854775807n) throw new PgSettingError('int8 values are not parsed to exact BigInts', 'the pg type parsers (a bug: report it)')
  const insert = await db.query<{ sc: string }>({
    text: `WITH s AS MATERIALIZED (${INSERT_SETTINGS}) SELECT current_setting('synchronous_commit') AS sc FROM s`,
    values: [String(Math.trunc(statementTimeoutMs))]
  })
  const sc = insert.rows[0]!.sc
  if (sc !== 'on') throw new PgSettingError(`synchronous_commit is ${sc} inside a pet insert, so a 201 would not mean committed to disk`, 'that nothing between the service and the server rewrites set_config')
}
