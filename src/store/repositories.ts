import { ALL_SCOPES, scopesText } from '../schemas/scopes.js'
import { type KeyGrantRow, type KeyRow, toApiKey, toKeyGrant } from './rows.js'
import type { ApiKeyGrant, ApiKeyRecord, ApiKeyRepository, NewApiKey, SettingRepository } from './store.js'

/** What differs between the stores for keys and settings; each write is durable when it resolves. */
export interface KeysAndSettingsSql {
  insertKey (key: { name: string, hash: string, scopes: string, createdAt: Date, expiresAt: Date | null }): Promise<KeyRow>
  keyByHash (hash: string): Promise<KeyGrantRow | undefined>
  listKeys (): Promise<KeyRow[]>
  /** revoked_at becomes the earlier of `at` and the one set; returns how many keys have `id`. */
  revokeKey (id: number, at: Date): Promise<number>
  /** Never moves last_used_at back. */
  touchKeys (usedAt: Map<number, Date>): Promise<void>
  countKeys (): Promise<bigint>
  /** Another instance's setting of that name stays. */
  insertSettingIfAbsent (name: string, value: string): Promise<void>
  /** Read after, not in the snapshot of, the insert before it. */
  setting (name: string): Promise<string>
}

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
