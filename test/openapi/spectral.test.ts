import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { onCleanup } from '../helpers/cleanup.js'

type Json = Record<string, any>
const root = fileURLToPath(new URL('../../', import.meta.url))

/** Spectral with .spectral.yaml (spectral:oas and OWASP) on a copy of the document, laid out as in the repository. */
function lint (t: Parameters<typeof onCleanup>[0], change: (doc: Json) => void): { status: number | null, findings: Json[] } {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-spectral-'))
  onCleanup(t, () => { rmSync(dir, { recursive: true, force: true }) })
  mkdirSync(join(dir, 'openapi'))
  const doc = JSON.parse(readFileSync(join(root, 'openapi/openapi.json'), 'utf8')) as Json
  change(doc)
  writeFileSync(join(dir, 'openapi/openapi.json'), JSON.stringify(doc, null, 2))
  copyFileSync(join(root, '.spectral.yaml'), join(dir, '.spectral.yaml'))
  const run = spawnSync(process.execPath, [join(root, 'node_modules/@stoplight/spectral-cli/dist/index.js'), 'lint', 'openapi/openapi.json',
    '--ruleset', '.spectral.yaml', '--fail-severity', 'hint', '--format', 'json', '--quiet'], { cwd: dir, encoding: 'utf8', env: { ...process.env, NODE_PATH: join(root, 'node_modules') } })
  assert.equal(run.stderr.trim(), '', 'spectral ran without an error of its own')
  return { status: run.status, findings: JSON.parse(run.stdout.trim() === '' ? '[]' : run.stdout) as Json[] }
}

describe('npm run lint:spectral (spectral:oas and the OWASP API ruleset)', () => {
  it('finds nothing in the committed document: every finding is fixed or answered in .spectral.yaml', (t) => {
    const { status, findings } = lint(t, () => {})
    assert.deepEqual(findings.map(f => `${String(f.code)} ${(f.path as string[]).join('.')}`), [])
    assert.equal(status, 0)
  })

  it('fails on what the issue found: no maxItems on the page, no maxLength on the cursor, no info.contact', (t) => {
    const { status, findings } = lint(t, doc => {
      delete doc.paths['/pets'].get.responses['200'].content['application/json'].schema.maxItems
      delete doc.paths['/pets'].get.parameters.find((p: Json) => p.name === 'cursor').schema.maxLength
      delete doc.info.contact
    })
    assert.equal(status, 1)
    assert.deepEqual(findings.map(f => String(f.code)).sort(), ['info-contact', 'owasp:api4:2023-array-limit', 'owasp:api4:2023-string-limit'])
  })
})
