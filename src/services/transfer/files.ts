import { once } from 'node:events'
import { createWriteStream, type WriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { finished } from 'node:stream/promises'
import { partialPath, publish } from '../../store/files.js'

/** A file that appears at `path` only once complete; mode 0600: it holds key hashes and the cursor key. */
export class AtomicFile {
  readonly stream: WriteStream
  readonly tmp: string
  private readonly opened: Promise<void>

  constructor (readonly path: string) {
    this.tmp = partialPath(path)
    this.stream = createWriteStream(this.tmp, { flags: 'wx', mode: 0o600 })
    this.opened = once(this.stream, 'open').then(() => {})
  }

  async ready (): Promise<void> { await this.opened }

  /** Ends the stream and waits until all is written; again after that, resolves at once. */
  async finish (): Promise<void> {
    this.stream.end()
    await finished(this.stream)
  }

  async commit (): Promise<void> {
    await this.finish()
    await publish(this.tmp, this.path)
  }

  async abort (): Promise<void> {
    this.stream.destroy()
    await rm(this.tmp, { force: true })
  }
}
