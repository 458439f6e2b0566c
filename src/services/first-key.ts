import { closeSync, fchmodSync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/index.js'
import { DescribedError } from '../errors.js'
import { createApiKey } from './api-keys.js'
import type { Store } from '../store/store.js'

/**
 * On a first start without keys, one is handed out at once, never through the log stream (it lands in
 * log aggregation): on a terminal to stderr, else to FIRST_KEY_FILE (0600), opened before the key is
 * made so that a failure leaves no unseen key behind.
 */
export async function handOutFirstKey (store: Store, config: Pick<Config, 'firstKeyFile' | 'cli'> & { url: string }, log: FastifyBaseLogger, toTerminal = process.stderr.isTTY === true): Promise<void> {
  if (toTerminal) {
    const { key } = await createApiKey(store, 'first key')
    process.stderr.write(
      '\nNo API keys existed, so one was created. It is shown only this once:\n\n' +
      `    ${key}\n\n` +
      `Try: curl -H 'Authorization: Bearer ${key}' ${config.url}/v1/pets\n` +
      `Make more with: ${config.cli} keys create --name NAME\n\n`
    )
    return
  }
  const path = config.firstKeyFile
  let fd: number
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    fd = openSync(path, 'w', 0o600)
    fchmodSync(fd, 0o600) // an existing file keeps its old mode otherwise
  } catch (cause) {
    throw new DescribedError(`cannot write the first API key to ${path} (${(cause as { code?: string }).code ?? (cause as Error).message}); set FIRST_KEY_FILE to a writable path, or make a key first with petstore keys create --name NAME --create`, { cause })
  }
  try {
    const { key } = await createApiKey(store, 'first key')
    writeSync(fd, `${key}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  log.info({ file: path }, `No API keys existed, so one was created. It is in ${path} (mode 0600): copy it, then delete the file. Make more with: ${config.cli} keys create --name NAME`)
}
