import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { onCleanup } from '../helpers/cleanup.js'

type Json = Record<string, any>
const root = fileURLToPath(new URL('../../', import.meta.url))
const script = join(root, 'scripts/openapi-compat.mjs')
const current = (): Json => JSON.parse(readFileSync(join(root, 'openapi/openapi.json'), 'utf8'))

interface Verdict { status: number | null, report: Json, stderr: string }

/** `npm run openapi:compat`'s script on a changed copy of the current document, in a directory of the test's own. */
function check (t: Parameters<typeof onCleanup>[0], change: (doc: Json) => void, exceptions?: Json): Verdict {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-compat-'))
  onCleanup(t, () => { rmSync(dir, { recursive: true, force: true }) })
  const doc = current()
  change(doc)
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc))
  const args = [script, '--current', join(dir, 'openapi.json'), '--json']
  if (exceptions !== undefined) {
    writeFileSync(join(dir, 'exceptions.json'), JSON.stringify(exceptions))
    args.push('--exceptions', join(dir, 'exceptions.json'))
  }
  const run = spawnSync(process.execPath, args, { encoding: 'utf8', cwd: root })
  return { status: run.status, report: JSON.parse(run.stdout) as Json, stderr: run.stderr }
}

const ids = (v: Verdict): string[] => (v.report.breaking as Json[]).map(c => c.id as string)

describe('the compatibility check (npm run openapi:compat) against openapi/released/1.0.0.json', () => {
  it('passes the committed document, its accepted changes each named with a reason', (t) => {
    const v = check(t, () => {})
    assert.equal(v.status, 0, v.stderr)
    assert.deepEqual(ids(v), [])
    assert.deepEqual(v.report.staleExceptions, [])
    assert.equal(v.report.released, '1.0.0')
    for (const a of v.report.accepted as Json[]) assert.ok(String(a.reason).length > 40, a.change)
  })

  it('fails when an enum value a client may send is removed: from a body field and from a query parameter', (t) => {
    const body = check(t, doc => { doc.components.schemas.NewPet.properties.status.enum = ['available', 'pending'] })
    assert.equal(body.status, 1)
    assert.deepEqual(ids(body), ['components/schemas/NewPet.status (request): enum value "sold" no longer accepted'])
    const query = check(t, doc => {
      const status = doc.paths['/pets'].get.parameters.find((p: Json) => p.name === 'status')
      status.schema.enum = ['available', 'sold']
    })
    assert.equal(query.status, 1)
    assert.deepEqual(ids(query), ['GET /pets (listPets) query status (request): enum value "pending" no longer accepted'])
  })

  it('fails when an operation is removed', (t) => {
    const v = check(t, doc => { delete doc.paths['/pets'].post })
    assert.equal(v.status, 1)
    assert.deepEqual(ids(v), ['POST /pets (createPet): operation removed'])
  })

  it('passes an optional field added to a response, and a new error code', (t) => {
    const field = check(t, doc => { doc.components.schemas.Pet.properties.nickname = { type: 'string', maxLength: 64, description: 'A second name.' } })
    assert.equal(field.status, 0, field.stderr)
    assert.deepEqual(ids(field), [])
    const code = check(t, doc => {
      doc.components.schemas.Error.properties.code.anyOf[0].enum.push('store_gone')
      doc.components.schemas.Error['x-error-codes'].store_gone = { status: 503, description: 'The store is gone.' }
    })
    assert.equal(code.status, 0, code.stderr)
  })

  it('fails when a response field may be missing, a request field becomes required, a request bound narrows, a response enum widens or an error code changes status', (t) => {
    const optional = check(t, doc => { doc.components.schemas.Pet.required = doc.components.schemas.Pet.required.filter((n: string) => n !== 'name') })
    assert.deepEqual(ids(optional), ['components/schemas/Pet.name (response): no longer always present'])
    const required = check(t, doc => { doc.components.schemas.NewPet.required.push('status') })
    assert.deepEqual(ids(required), ['components/schemas/NewPet.status (request): now required'])
    const limit = check(t, doc => { doc.paths['/pets'].get.parameters.find((p: Json) => p.name === 'limit').schema.maximum = 50 })
    assert.deepEqual(ids(limit), ['GET /pets (listPets) query limit (request): maximum lowered'])
    const status = check(t, doc => { doc.components.schemas.Pet.properties.status.enum.push('adopted') })
    assert.deepEqual(ids(status), ['components/schemas/Pet.status (response): may answer enum value "adopted", not in the released enum'])
    const code = check(t, doc => { doc.components.schemas.Error['x-error-codes'].gone.status = 404 })
    assert.deepEqual(ids(code), ['components/schemas/Error x-error-codes gone: status changed from 410 to 404'])
    for (const v of [optional, required, limit, status, code]) assert.equal(v.status, 1)
  })

  it('passes a breaking change recorded as a new major version, and still lists it', (t) => {
    const v = check(t, doc => {
      doc.info.version = '2.0.0'
      delete doc.paths['/pets/{petId}']
    })
    assert.equal(v.status, 0, v.stderr)
    assert.equal(v.report.newMajor, true)
    assert.deepEqual(ids(v), ['GET /pets/{petId} (getPet): operation removed'])
    const minor = check(t, doc => {
      doc.info.version = '1.1.0'
      delete doc.paths['/pets/{petId}']
    })
    assert.equal(minor.status, 1)
  })

  it('fails on an exception that matches no change, so the list cannot outlive what it excuses', (t) => {
    const v = check(t, () => {}, { against: '1.0.0', accepted: [{ change: 'POST /pets (createPet): operation removed', reason: 'no such change' }] })
    assert.equal(v.status, 1)
    assert.deepEqual((v.report.staleExceptions as Json[]).map(a => a.change), ['POST /pets (createPet): operation removed'])
  })

  it('holds info.version to the additions: an addition keeping the released minor fails; the next minor passes; prose alone may keep it', (t) => {
    const addition = (version: string) => (doc: Json) => {
      doc.info.version = version
      doc.components.schemas.Pet.properties.nickname = { type: 'string', maxLength: 64, description: 'A second name.' }
    }
    for (const version of ['1.0.0', '1.0.7']) {
      const v = check(t, addition(version))
      assert.equal(v.status, 1, version)
      assert.deepEqual(ids(v), [])
      assert.match(String(v.report.versionTooLow), /differs from the released 1\.0\.0 in more than prose \(first at \/components\/schemas\/[^)]+\): an addition raises info\.version's minor \(1\.1\.0\)/)
      assert.match(v.stderr, /an addition raises info\.version's minor/)
    }
    for (const version of ['1.1.0', '1.2.3', '2.0.0']) assert.equal(check(t, addition(version)).status, 0, version)
    // Against a release equal to the current document: a changed description is a patch, a new field is not.
    const released = current()
    const prose = checkAgainst(t, released, doc => { doc.info.version = released.info.version; doc.components.schemas.Pet.properties.name.description = 'What the pet answers to.' })
    assert.equal(prose.status, 0, prose.stderr)
    const field = checkAgainst(t, released, doc => { doc.info.version = released.info.version; doc.components.schemas.Pet.properties.title = { type: 'string' } })
    assert.equal(field.status, 1)
    assert.match(String(field.report.versionTooLow), /first at \/components\/schemas\/Pet\/properties\/title\)/)
  })

  it('still fails a breaking change at a new minor, and passes an addition at the committed version', (t) => {
    const removed = check(t, doc => { doc.info.version = '1.2.0'; delete doc.paths['/pets'].post })
    assert.equal(removed.status, 1)
    assert.deepEqual(ids(removed), ['POST /pets (createPet): operation removed'])
    const committed = current().info.version as string
    assert.notEqual(committed, '1.0.0', 'the committed document adds to 1.0.0: its version must say so')
    assert.equal(check(t, doc => { doc.components.schemas.Pet.properties.nickname = { type: 'string' } }).status, 0)
  })
})

/** As check(), against `base` as the released document (written as its own file) with no exceptions. */
function checkAgainst (t: Parameters<typeof onCleanup>[0], base: Json, change: (doc: Json) => void): Verdict {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-compat-'))
  onCleanup(t, () => { rmSync(dir, { recursive: true, force: true }) })
  const doc = current()
  change(doc)
  writeFileSync(join(dir, 'base.json'), JSON.stringify(base))
  writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc))
  writeFileSync(join(dir, 'exceptions.json'), JSON.stringify({ against: base.info.version, accepted: [] }))
  const run = spawnSync(process.execPath, [script, '--base', join(dir, 'base.json'), '--current', join(dir, 'openapi.json'), '--exceptions', join(dir, 'exceptions.json'), '--json'], { encoding: 'utf8', cwd: root })
  return { status: run.status, report: JSON.parse(run.stdout) as Json, stderr: run.stderr }
}
