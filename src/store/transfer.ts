import type { DatabaseLocation } from '../config/index.js'
import type { StoreConfig } from './options.js'
import type { TransferWriter } from './transfer/contract.js'
import type { TransferReader } from './transfer/reader.js'

// Each store's transfer module is loaded only for a location of its kind.

/** Opens a reader on the store at `location` (applying pending migrations first, as every command does). */
export async function openTransferReader (location: DatabaseLocation, config: StoreConfig): Promise<TransferReader> {
  if (location.kind === 'sqlite') {
    const { openSqliteReader } = await import('./sqlite/transfer.js')
    return openSqliteReader(location.path, 'FULL')
  }
  const { openPostgresReader } = await import('./postgres/transfer.js')
  return await openPostgresReader({ ...config, url: location.url })
}

export async function openTransferWriter (location: DatabaseLocation, config: StoreConfig): Promise<TransferWriter> {
  if (location.kind === 'sqlite') {
    const { SqliteTransferWriter } = await import('./sqlite/transfer.js')
    return SqliteTransferWriter.open(location.path, 'FULL')
  }
  const { PostgresTransferWriter } = await import('./postgres/transfer.js')
  return await PostgresTransferWriter.open({ ...config, url: location.url })
}
