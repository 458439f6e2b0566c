import { ALL_SCOPES, scopesText } from '../schemas/scopes.js'
import { type KeyGrantRow, type KeyRow, toApiKey, toKeyGrant } from './rows.js'
import type { ApiKeyGrant, ApiKeyRecord, ApiKeyRepository, NewApiKey, SettingRepository } from './store.js'

/**
 * The statements behind the API keys and settings, one per call, in a database's own SQL and
 * driver: all that differs between the stores. Each write is committed (durably, as the store
 * commits) when its promise resolves.
 */
export interface KeysAndSettingsSql {
  /** Inserts a key; the row as stored (KEY_COLUMNS). */
  insertKey (key: { name: string, hash: string, scopes: string, createdAt: Date, expiresAt: Date | null }): Promise<KeyRow>
  keyByHash (hash: string): Promise<KeyGrantRow | undefined>
  /** Every key, ascending id. */
  listKeys (): Promise<KeyRow[]>
  /** Sets the key's revoked_at to the earlier of `at` and the one set (`at` when none); how many keys have `id`. */
  revokeKey (id: number, at: Date): Promise<number>
  /** Moves each key's last_used_at forward to its time (never back); `usedAt` is not empty. */
  touchKeys (usedAt: Map<number, Date>): Promise<void>
  countKeys (): Promise<bigint>
  /** Inserts the setting unless one of that name exists (another instance's stays). */
  insertSettingIfAbsent (name: string, value: string): Promise<void>
  /** The value of a setting that exists, read after (not in the snapshot of) the insert before it. */
  setting (name: string): Promise<string>
}

/**
 * The API-key and setting repositories, written once for both stores over their
 * KeysAndSettingsSql: the defaults, the mapping of rows to the service's objects, and what a call
 * answers. Each store extends it and gives its SQL.
 */
export abstract class KeysAndSettings implements ApiKeyRepository, SettingRepository {
  protected abstract readonly sql: KeysAndSettingsSql

  async createApiKey (key: NewApiKey): Promise<ApiKeyRecord> {
    return toApiKey(await this.sql.insertKey({
      name: key.name,
      hash: key.hash,
      scopes: scopesText(key.scopes ?? ALL_SCOPES),
      createdAt: key.createdAt,
      expiresAt: key.expiresAt ?? null
    }))
  }

  async findApiKeyByHash (hash: string): Promise<ApiKeyGrant | undefined> {
    const row = await this.sql.keyByHash(hash)
    return row === undefined ? undefined : toKeyGrant(row)
  }

  async listApiKeys (): Promise<ApiKeyRecord[]> {
    return (await this.sql.listKeys()).map(toApiKey)
  }

  async revokeApiKey (id: number, at: Date): Promise<boolean> {
    return (await this.sql.revokeKey(id, at)) > 0
  }

  async touchApiKeys (usedAt: Map<number, Date>): Promise<void> {
    if (usedAt.size === 0) return
    await this.sql.touchKeys(usedAt)
  }

  async countApiKeys (): Promise<number> {
    return Number(await this.sql.countKeys())
  }

  async getOrCreateSetting (name: string, create: () => string): Promise<string> {
    await this.sql.insertSettingIfAbsent(name, create())
    return await this.sql.setting(name)
  }
}
