import type { NewPet, Pet } from '../schemas/pets.js'
import { ALL_SCOPES, scopesText } from '../schemas/scopes.js'
import type { CreateItem, CreateOutcome } from './creates.js'
import { GroupCommit, type GroupCommitOptions } from './group-commit.js'
import { type KeyGrantRow, type KeyRow, storedPet, toApiKey, toKeyGrant } from './rows.js'
import type {
  ApiKeyGrant, ApiKeyRecord, ApiKeyRepository, IdempotencyKey, IdempotentCreateResult, NewApiKey, PetRepository, SettingRepository
} from './store.js'

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

/**
 * What both stores share above their SQL: pet creates group-committed through the store's
 * commitCreates, each caller getting its own result; keys and settings through its `sql`.
 */
export abstract class SharedRepositories implements Pick<PetRepository, 'createPet' | 'createPetIdempotent'>, ApiKeyRepository, SettingRepository {
  protected abstract readonly sql: KeysAndSettingsSql
  protected readonly creates: GroupCommit<CreateItem, CreateOutcome>

  constructor (createOptions?: GroupCommitOptions) {
    this.creates = new GroupCommit(async (items) => await this.commitCreates(items), createOptions)
  }

  /** One batch, in a transaction that keeps every other pet insert out until it commits (see creates.ts). */
  protected abstract commitCreates (items: CreateItem[]): Promise<CreateOutcome[]>

  async createPet (pet: NewPet): Promise<Pet> {
    return storedPet(await this.creates.submit({ pet }) as bigint, pet)
  }

  async createPetIdempotent (pet: NewPet, idem: IdempotencyKey): Promise<IdempotentCreateResult> {
    const out = await this.creates.submit({ pet, idem })
    if (out === null) return { outcome: 'mismatch' }
    if (typeof out === 'bigint') return { outcome: 'created', pet: storedPet(out, pet) }
    return { outcome: 'replayed', pet: out }
  }

  async createApiKey (key: NewApiKey): Promise<ApiKeyRecord> {
    return toApiKey(await this.sql.insertKey({ ...key, scopes: scopesText(key.scopes ?? ALL_SCOPES), expiresAt: key.expiresAt ?? null }))
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
