// Writes the OpenAPI document the service serves (with the default configuration) to
// openapi/openapi.json and openapi/openapi.yaml. `--check` writes nothing and exits 1 when the
// committed files differ from what the code generates.
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { generateDocument } from '../test/helpers/openapi-document.js'

const dir = fileURLToPath(new URL('../openapi/', import.meta.url))
const { json, yaml } = await generateDocument()
const files: Array<[string, string]> = [[`${dir}openapi.json`, json], [`${dir}openapi.yaml`, yaml]]

if (process.argv.includes('--check')) {
  const stale = files.filter(([path, text]) => {
    try {
      return readFileSync(path, 'utf8') !== text
    } catch {
      return true
    }
  })
  for (const [path] of stale) process.stderr.write(`${path} differs from the generated document: run npm run openapi and commit\n`)
  process.exit(stale.length === 0 ? 0 : 1)
}
for (const [path, text] of files) writeFileSync(path, text)
process.stdout.write(`wrote ${files.map(f => f[0]).join(', ')}\n`)
