import { once } from 'node:events'
import type { Writable } from 'node:stream'
import type { Progress, TransferWriter } from '../../store/transfer/contract.js'
import type { TransferReader } from '../../store/transfer/reader.js'
import {
  COUNT_NAMES, COUNT_OF, type Counts, type DataRecord, endLine, FORMAT, FORMAT_VERSION, headerLine, PetDigest, recordLine
} from './format.js'
import type { Line } from './lines.js'
import { parseExport } from './parse.js'

const PROGRESS_EVERY = 1000

export interface StoreSummary { kind: 'sqlite' | 'postgres', counts: Counts, petsSha256: string }

const total = (c: Counts) => c.settings + c.apiKeys + c.pets + c.idempotencyKeys
const emptyCounts = (): Counts => ({ settings: 0, apiKeys: 0, pets: 0, idempotencyKeys: 0 })

export class LineSink {
  private pending = ''
  private failed: Error | undefined

  constructor (private readonly out: Writable) {
    // E.g. EPIPE when the reader of stdout went away (`petstore export | head`): fail the export, not the process.
    out.on('error', (err) => { this.failed ??= err })
  }

  /** Lines go out in chunks of 64 KiB; a full chunk waits until the stream drains. */
  async write (line: string): Promise<void> {
    this.check()
    this.pending += line + '\n'
    if (this.pending.length >= 65536) await this.flush()
  }

  async flush (): Promise<void> {
    if (this.pending === '') return
    const chunk = this.pending
    this.pending = ''
    if (!this.out.write(chunk)) await once(this.out, 'drain').catch((err: Error) => { this.failed ??= err })
    this.check()
  }

  private check (): void {
    if (this.failed !== undefined) throw new Error(`the output closed before the export was complete (${(this.failed as NodeJS.ErrnoException).code ?? this.failed.message})`)
  }
}

/** Streams from one snapshot, so memory stays flat and the header's counts are exactly what follows. */
export async function exportStore (reader: TransferReader, sink: LineSink, opts: { liveSince: number, now: Date, progress: Progress }): Promise<StoreSummary> {
  const counts = await reader.begin(opts.liveSince)
  opts.progress.start(total(counts), 'records')
  await sink.write(headerLine({ format: FORMAT, version: FORMAT_VERSION, source: reader.kind, exportedAt: opts.now.toISOString(), counts }))
  const seen = emptyCounts()
  const digest = new PetDigest()
  await feed(reader.records(), async (r) => {
    const line = recordLine(r)
    if (r.type === 'pet') digest.addLine(line)
    seen[COUNT_OF[r.type]]++
    await sink.write(line)
  }, opts.progress)
  await reader.end()
  // The snapshot makes this hold; checked because a file that broke it could never be imported.
  for (const name of COUNT_NAMES) if (seen[name] !== counts[name]) throw new Error(`the store changed while it was read (${name}: counted ${counts[name]}, read ${seen[name]})`)
  const petsSha256 = digest.hex()
  await sink.write(endLine({ type: 'end', petsSha256 }))
  await sink.flush()
  opts.progress.stop()
  return { kind: reader.kind, counts, petsSha256 }
}

async function feed<R extends DataRecord> (records: AsyncIterable<R>, write: (r: R) => Promise<void>, progress: Progress): Promise<void> {
  let done = 0
  for await (const r of records) {
    await write(r)
    if (++done % PROGRESS_EVERY === 0) progress.update(done)
  }
  progress.update(done)
}

async function committed (writer: TransferWriter, progress: Progress, fill: () => Promise<void>): Promise<void> {
  try {
    await fill()
    await writer.commit()
  } catch (err) {
    await writer.rollback()
    throw err
  } finally {
    progress.stop()
  }
}

const isEmpty = (c: Counts) => c.apiKeys === 0 && c.pets === 0 && c.idempotencyKeys === 0
const describe = (c: Counts) => `${c.pets} pets, ${c.apiKeys} API keys, ${c.idempotencyKeys} Idempotency-Keys`

export interface ImportSummary extends StoreSummary { source: 'sqlite' | 'postgres', intoNonempty: boolean }

/**
 * One transaction: any bad line, refused record, wrong count or checksum, or truncation rolls it all
 * back. An empty target takes the file's settings; a non-empty one (only with `intoNonempty`) keeps
 * its own, and any collision fails.
 */
export async function importExport (lines: AsyncGenerator<Line>, writer: TransferWriter, opts: { intoNonempty: boolean, progress: Progress }): Promise<ImportSummary> {
  const file = await parseExport(lines)
  const existing = await writer.begin()
  const empty = isEmpty(existing)
  await committed(writer, opts.progress, async () => {
    if (!empty && !opts.intoNonempty) {
      throw new Error(`the target store is not empty (${describe(existing)}); import into an empty store, or pass --into-nonempty to add to it`)
    }
    opts.progress.start(total(file.header.counts), 'records')
    await feed(file.records, async (r) => { await writer.write(r, empty) }, opts.progress)
  })
  return { kind: writer.kind, source: file.header.source, counts: file.header.counts, petsSha256: file.petsSha256(), intoNonempty: !empty }
}

/** The reader's snapshot straight into the writer's one transaction; the target must be empty. */
export async function copyStore (reader: TransferReader, writer: TransferWriter, opts: { liveSince: number, progress: Progress }): Promise<StoreSummary> {
  const counts = await reader.begin(opts.liveSince)
  const existing = await writer.begin()
  const digest = new PetDigest()
  await committed(writer, opts.progress, async () => {
    if (!isEmpty(existing)) throw new Error(`the target store is not empty (${describe(existing)}); copy only into an empty store`)
    opts.progress.start(total(counts), 'records')
    await feed(reader.records(), async (r) => {
      if (r.type === 'pet') digest.add(r)
      await writer.write(r, true)
    }, opts.progress)
    await reader.end()
  })
  return { kind: reader.kind, counts, petsSha256: digest.hex() }
}

/** Counts and the pets checksum of a store as it is now (one snapshot), read independently of any copy. */
export async function summarizeStore (reader: TransferReader, liveSince: number): Promise<StoreSummary> {
  const counts = await reader.begin(liveSince)
  const digest = new PetDigest()
  for await (const p of reader.pets()) digest.add(p)
  await reader.end()
  return { kind: reader.kind, counts, petsSha256: digest.hex() }
}

export function sameSummary (a: StoreSummary, b: StoreSummary): boolean {
  return a.petsSha256 === b.petsSha256 && COUNT_NAMES.every(n => a.counts[n] === b.counts[n])
}
