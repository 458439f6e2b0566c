import { once } from 'node:events'
import { createWriteStream, type WriteStream } from 'node:fs'
import { rm } from 'node:fs/promises'
import { partialPath, publish } from '../../store/files.js'

/** A file that appears at `path` only once complete; mode 0600: it holds key hashes and the cursor key. */
export class AtomicFile {
  readonly stream: WriteStream
  readonly tmp: string
  private readonly opened: Promise<void>
  private finished = false

  constructor (readonly path: string) {
    this.tmp = partialPath(path)
    this.stream = createWriteStream(this.tmp, { flags: 'wx', mode: 0o600 })
    this.opened = once(this.stream, 'open').then(() => {})
  }

  async ready (): Promise<void> { await this.opened }

  async finish (): Promise<void> {
    if (this.finished) return
    this.finished = true
    await new Promise<void>((resolve, reject) => this.stream.end((err?: Error | null) => err == null ? resolve() : reject(err)))
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
