import { open, rename } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

/** fsync of a file or directory, so a rename is durable and the renamed file complete after a crash. */
export async function fsyncPath (path: string): Promise<void> {
  const fh = await open(path, 'r')
  try {
    await fh.sync()
  } finally {
    await fh.close()
  }
}

/** The temporary name a file is written under, beside its final name (same file system, so rename is atomic). */
export const partialPath = (path: string) => join(dirname(path), `.${basename(path)}.partial-${process.pid}`)

/** Renames a finished temporary file into place, durably: the file's data, then the directory entry. */
export async function publish (tmp: string, path: string): Promise<void> {
  await fsyncPath(tmp)
  await rename(tmp, path)
  await fsyncPath(dirname(path))
}
