import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/index.js'
import { openStore } from '../../src/store/index.js'

/**
 * The document exactly as the service generates it under the default configuration (what
 * openapi/openapi.json commits): JSON as GET /openapi.json sends it, and YAML.
 */
export async function generateDocument (): Promise<{ json: string, yaml: string, document: Record<string, unknown> }> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-openapi-'))
  try {
    // Overload shedding off: on a loaded machine a 503 must not be written out as the document.
    const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`, EVENT_LOOP_MAX_DELAY_MS: '0' }, dir)
    const app = await buildApp({ config, store: await openStore(config) })
    try {
      const json = (await app.inject({ url: '/openapi.json' })).body
      const yaml = (await app.inject({ url: '/openapi.yaml' })).body
      return { json: json.endsWith('\n') ? json : `${json}\n`, yaml, document: JSON.parse(json) }
    } finally {
      await app.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
