// Writes the reference pages that have one source each, and .env.example (scripts/reference-docs.ts
// says which source gives which file). `--check` writes nothing and exits 1 when a committed file
// differs from what its source gives (test/docs/reference.test.ts checks the same in `npm test`).
import { writeFileSync } from 'node:fs'
import { renderReferences, ROOT, staleReferences } from './reference-docs.js'

const files = await renderReferences()
if (process.argv.includes('--check')) {
  const stale = staleReferences(files)
  for (const path of stale) process.stderr.write(`${path} differs from what its source generates: run npm run docs and commit\n`)
  process.exit(stale.length === 0 ? 0 : 1)
}
for (const [path, text] of Object.entries(files)) writeFileSync(`${ROOT}${path}`, text)
process.stdout.write(`wrote ${Object.keys(files).join(', ')}\n`)
