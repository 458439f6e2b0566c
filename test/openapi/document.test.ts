import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { parse as parseYaml } from 'yaml'
import { loadConfig } from '../../src/config/index.js'
import { ERROR_CODES } from '../../src/errors.js'
import { CURSOR_MAX_LENGTH, CURSOR_PATTERN, IDEMPOTENCY_KEY, LIMIT_MAX, NAME_PATTERN } from '../../src/schemas/pets.js'
import { buildTestApp } from '../helpers/app.js'
import { generateDocument } from '../helpers/openapi-document.js'

type Json = Record<string, any>
const committed = (name: string): string => readFileSync(new URL(`../../openapi/${name}`, import.meta.url), 'utf8')

describe('the OpenAPI document', () => {
  it('is committed exactly as the code generates it (run npm run openapi after changing a route)', async () => {
    const { json, yaml } = await generateDocument()
    assert.equal(committed('openapi.json'), json)
    assert.equal(committed('openapi.yaml'), yaml)
  })

  it('is served at /openapi.json and /openapi.yaml without a key', async (t) => {
    const ta = await buildTestApp(t)
    const json = await ta.app.inject({ url: '/openapi.json' })
    assert.equal(json.statusCode, 200)
    assert.match(String(json.headers['content-type']), /^application\/json/)
    const yaml = await ta.app.inject({ url: '/openapi.yaml' })
    assert.equal(yaml.statusCode, 200)
    assert.match(String(yaml.headers['content-type']), /^application\/yaml/)
    assert.deepEqual(parseYaml(yaml.body), json.json())
    assert.equal(json.json().openapi, '3.1.0')
  })

  const doc = JSON.parse(committed('openapi.json')) as Json
  // An operation with its responses as they read: inline, or shared under components/responses.
  const op = (path: string, method: string): Json => {
    const o = doc.paths[path][method]
    return { ...o, responses: Object.fromEntries(Object.entries(o.responses as Json).map(([status, r]) => [status, response(r)])) }
  }
  const response = (r: Json): Json => typeof r.$ref === 'string' ? doc.components.responses[r.$ref.split('/').pop()!] : r
  // A response header, inline or shared under components/headers.
  const header = (response: Json, name: string): Json => {
    const h = response.headers[name]
    return typeof h.$ref === 'string' ? doc.components.headers[h.$ref.split('/').pop()] : h
  }

  it('names the three operations with summaries and descriptions; getPet is deprecated with its sunset and replacement', () => {
    for (const [path, method, id] of [['/pets', 'get', 'listPets'], ['/pets', 'post', 'createPet'], ['/pets/{petId}', 'get', 'getPet']] as const) {
      assert.equal(op(path, method).operationId, id)
      assert.ok(op(path, method).summary.length > 0)
      assert.ok(op(path, method).description.length > 0)
    }
    const getPet = op('/pets/{petId}', 'get')
    assert.equal(getPet.deprecated, true)
    assert.match(getPet.description, /Thu, 05 Dec 2030 00:00:00 GMT/)
    assert.match(getPet.description, /GET \/v1\/pets/)
    assert.equal(op('/pets', 'get').deprecated, undefined)
  })

  it('puts the bearer scheme with its scope on every /v1 operation, 401 and 403 with the challenge, and no scheme on the index and the health checks', () => {
    const scheme = doc.components.securitySchemes.bearerAuth
    assert.deepEqual(scheme, { ...scheme, type: 'http', scheme: 'bearer' })
    for (const scope of ['pets:read', 'pets:write']) assert.match(scheme.description, new RegExp(`- \`${scope}\`: `), `securitySchemes describes ${scope}`)
    assert.deepEqual(doc.security, [{ bearerAuth: [] }])
    const scopes: Record<string, string> = { listPets: 'pets:read', getPet: 'pets:read', listOrders: 'pets:read', createPet: 'pets:write' }
    for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const o of Object.values(item) as Json[]) {
        if (path === '/' || path === '/healthz' || path === '/readyz') {
          assert.deepEqual(o.security, [])
          continue
        }
        assert.deepEqual(o.security, [{ bearerAuth: [scopes[o.operationId]] }], `${o.operationId} names its scope`)
        const [r401, r403] = [response(o.responses['401']), response(o.responses['403'])]
        assert.ok(header(r401, 'WWW-Authenticate').required)
        assert.ok(header(r403, 'WWW-Authenticate').required)
        assert.match(r403.description, /`insufficient_scope`/)
        assert.match(r401.description, /`key_expired`/)
      }
    }
  })

  it('describes int64 fields, the cursor, the default status and the error catalogue', () => {
    const { Pet, NewPet, Error: ErrorSchema } = doc.components.schemas
    assert.deepEqual([Pet.properties.id.format, Pet.properties.categoryId.format, NewPet.properties.categoryId.format], ['int64', 'int64', 'int64'])
    assert.equal(NewPet.properties.status.default, 'available')
    const params = op('/pets', 'get').parameters as Json[]
    assert.deepEqual(params.map(p => `${p.in} ${p.name}`), ['query limit', 'query status', 'query cursor', 'header if-none-match', 'header if-match', 'header accept-encoding'])
    // The request headers the service reads are parameters, with the rule it checks.
    const idempotencyKey = (op('/pets', 'post').parameters as Json[]).find(p => p.in === 'header' && p.name === 'idempotency-key')
    assert.equal(idempotencyKey?.schema.pattern, IDEMPOTENCY_KEY)
    assert.equal(NewPet.properties.name.pattern, NAME_PATTERN)
    assert.equal(params[0]!.schema.default, 20)
    assert.equal(op('/pets/{petId}', 'get').parameters[0].schema.format, 'int64')
    // An open set: the catalogue, or any snake_case code a later version adds.
    const [known, later] = ErrorSchema.properties.code.anyOf
    assert.deepEqual(known.enum, Object.keys(ERROR_CODES))
    assert.deepEqual(later, { type: 'string', maxLength: 64, pattern: '^[a-z][a-z0-9_]*$' })
    for (const code of Object.keys(ERROR_CODES)) assert.match(code, new RegExp(later.pattern, 'u'))
    assert.deepEqual([params[0]!.schema.format, ErrorSchema.properties.status.format], ['int32', 'int32'])
    assert.deepEqual([params[2]!.schema.maxLength, params[2]!.schema.pattern], [CURSOR_MAX_LENGTH, CURSOR_PATTERN])
    assert.equal(op('/pets', 'get').responses['200'].content['application/json'].schema.maxItems, LIMIT_MAX)
    assert.equal(typeof doc.info.contact.name, 'string')
    assert.deepEqual(ErrorSchema['x-error-codes'], ERROR_CODES)
    assert.equal(header(op('/pets', 'post').responses['201'], 'Location').required, true)
    // getPet's own headers are on every answer of the operation; statuses Node's parser can also give
    // before routing (400, 414) list them without promising them; those only the parser gives (408, 431) carry none.
    for (const h of ['Deprecation', 'Sunset', 'Link']) {
      for (const [status, r] of Object.entries(op('/pets/{petId}', 'get').responses) as Array<[string, Json]>) {
        if (['408', '431'].includes(status)) assert.equal(r.headers?.[h], undefined, `${status} ${h}`)
        else assert.equal(header(r, h).required, ['400', '414', '505'].includes(status) ? undefined : true, `${status} ${h}`)
      }
    }
  })

  it('describes the answers every operation shares once, under components/responses, and gives each operation its code samples', () => {
    const shared = ['401', '403', '408', '413', '414', '415', '417', '429', '431', '500', '501', '503', '505']
    const used = new Set<string>()
    for (const item of Object.values(doc.paths as Record<string, Json>)) {
      for (const o of Object.values(item) as Json[]) {
        for (const [status, r] of Object.entries(o.responses as Record<string, Json>)) {
          // The shared statuses by reference, the operation's own answers inline.
          assert.equal(typeof r.$ref === 'string', shared.includes(status), `${o.operationId} ${status}`)
          if (typeof r.$ref === 'string') used.add(r.$ref.split('/').pop()!)
        }
        const samples = (o['x-codeSamples'] as Json[]).map(x => x.label)
        assert.deepEqual(samples, o.operationId === 'listOrders' || o.security?.length === 0 ? ['curl', 'fetch'] : ['curl', 'TypeScript client', 'fetch'], o.operationId)
      }
    }
    // Every shared answer is used, and keeps the headers it is sent with.
    assert.deepEqual([...used].sort(), Object.keys(doc.components.responses).sort())
    assert.ok(header(doc.components.responses.TooManyRequests, 'Retry-After').required)
    assert.ok(header(doc.components.responses.Unauthorized_getPet, 'Deprecation').required)
    assert.ok(header(doc.components.responses.Unauthorized, 'X-Request-Id').required)
    // Each is named and described by its status, never by the generic fallback "Error".
    for (const [name, r] of Object.entries(doc.components.responses as Record<string, Json>)) {
      assert.doesNotMatch(`${name} ${String(r.description)}`, /^Error(_|\s)|\sError:/, name)
    }
    assert.match(doc.info.description, /Every answer carries/)
  })

  it('uses no regular expression outside the subset every JSON Schema tool reads: no lookahead or lookbehind, no backreference', () => {
    const patterns: string[] = []
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk)
      else if (node !== null && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === 'pattern' && typeof v === 'string') patterns.push(v)
          else if (k === 'patternProperties' && v !== null && typeof v === 'object') patterns.push(...Object.keys(v))
          walk(v)
        }
      }
    }
    walk(doc)
    assert.ok(patterns.length >= 5, `patterns found: ${patterns.length}`)
    for (const p of patterns) assert.doesNotMatch(p, /\(\?<?[=!]|\\[1-9]|\\k</, p)
  })

  it('lists this server (relative) first, then the configured base addresses named for readers; health checks at their origin', async (t) => {
    const ta = await buildTestApp(t, { env: { PUBLIC_BASE_URL: 'https://api.example.org/v1', STAGING_BASE_URL: 'https://staging.example.org/v1' } })
    const served = (await ta.app.inject({ url: '/openapi.json' })).json() as Json
    assert.deepEqual(served.servers, [
      { url: '/v1', description: 'This server (where this document was fetched from)' },
      { url: 'https://api.example.org/v1', description: 'Production' },
      { url: 'https://staging.example.org/v1', description: 'Staging' }
    ])
    assert.deepEqual(served.paths['/healthz'].get.servers.map((s: Json) => s.url), ['/', 'https://api.example.org', 'https://staging.example.org'])
    assert.doesNotMatch(JSON.stringify(served.servers), /BASE_URL/)
  })

  it('names no loopback address when nothing is configured, also with HOST=0.0.0.0', async (t) => {
    const ta = await buildTestApp(t, { env: { HOST: '0.0.0.0' } })
    const served = (await ta.app.inject({ url: '/openapi.json' })).json() as Json
    assert.deepEqual(served.servers, [{ url: '/v1', description: 'This server (where this document was fetched from)' }])
    assert.deepEqual(doc.servers, served.servers)
    const csp = String((await ta.app.inject({ url: '/docs' })).headers['content-security-policy'])
    assert.match(csp, / connect-src 'self';$/)
    const same = await buildTestApp(t, { env: { PUBLIC_BASE_URL: 'https://api.example.org/v1', STAGING_BASE_URL: 'https://api.example.org/v1' } })
    const one = (await same.app.inject({ url: '/openapi.json' })).json() as Json
    assert.deepEqual(one.servers.map((s: Json) => s.description), ['This server (where this document was fetched from)', 'Production'])
    assert.match(String((await same.app.inject({ url: '/docs' })).headers['content-security-policy']), / connect-src 'self' https:\/\/api\.example\.org;$/)
  })
})

describe('PUBLIC_BASE_URL and STAGING_BASE_URL', () => {
  it('are unset by default (this server is always listed, relatively)', () => {
    const c = loadConfig({ PORT: '3000', HOST: '0.0.0.0' })
    assert.equal(c.publicBaseUrl, undefined)
    assert.equal(c.stagingBaseUrl, undefined)
  })

  it('must be absolute http(s) URLs ending in /v1', () => {
    for (const bad of ['api.example.org/v1', 'https://api.example.org', 'https://api.example.org/v1/', 'ftp://x/v1', 'https://x/v1?a=1']) {
      assert.throws(() => loadConfig({ PUBLIC_BASE_URL: bad }), /PUBLIC_BASE_URL: must be an absolute http\(s\) URL ending in \/v1/)
      assert.throws(() => loadConfig({ STAGING_BASE_URL: bad }), /STAGING_BASE_URL/)
    }
  })
})
