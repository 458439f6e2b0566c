import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { STORES, buildTestApp } from '../helpers/app.js'

/*
 * Schemathesis-style checks driven by the document the service serves (/openapi.json), on top of
 * the per-response conformance every buildTestApp response already gets (test/helpers/conformance.ts):
 * the router and the document list the same operations; every /v1 operation refuses a missing or bad
 * key; every undocumented method on a documented path is 405 with an exact Allow; inputs generated from
 * the schemas are accepted with a documented 2xx, and the same inputs broken one rule at a time are
 * refused with a documented 4xx Error whose code belongs to that status.
 */

type Json = Record<string, any>
const RUNS = Number(process.env.FC_RUNS ?? 40)
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
/** The document and its UI serve the contract; they are not operations of it. */
const isDocumentationRoute = (path: string): boolean => path.startsWith('/docs') || path.startsWith('/openapi.')

/** Routes (path → methods) parsed from Fastify's route tree; paths in the router's `:param` form. */
function walkRouter (app: FastifyInstance): Map<string, Set<string>> {
  const routes = new Map<string, Set<string>>()
  const stack: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (m === null) continue
    const depth = m[1]!.length / 4
    stack.length = depth
    const path = (stack[depth - 1] ?? '') + m[2]!
    stack[depth] = path
    if (m[3] !== undefined) {
      const set = routes.get(path) ?? new Set<string>()
      for (const method of m[3].split(', ')) set.add(method)
      routes.set(path, set)
    }
  }
  return routes
}

interface Op { method: string, template: string, path: string, op: Json }

function operations (doc: Json): Op[] {
  const ops: Op[] = []
  for (const [template, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue
      const servers: Array<{ url: string }> = op.servers ?? item.servers ?? doc.servers
      const base = new URL(servers[0]!.url, 'http://server.invalid').pathname.replace(/\/$/, '')
      ops.push({ method: method.toUpperCase(), template, path: base + template, op })
    }
  }
  return ops
}

const deref = (doc: Json, s: Json): Json =>
  typeof s.$ref === 'string'
    ? s.$ref.split('/').slice(1).reduce((n: Json, p: string) => n[p], doc)
    : s

/** A fast-check arbitrary for the subset of JSON Schema the document uses. */
function arbitrary (doc: Json, schema: Json): fc.Arbitrary<unknown> {
  const s = deref(doc, schema)
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum)
  switch (s.type) {
    case 'object': {
      const props = s.properties as Record<string, Json>
      const required = new Set<string>(s.required ?? [])
      const record: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [k, v] of Object.entries(props)) record[k] = arbitrary(doc, v)
      return fc.record(record, { requiredKeys: [...required] })
    }
    case 'string':
      // Lone surrogates are not well-formed Unicode, which JSON text must be: not valid input.
      return fc.string({ unit: 'binary', minLength: s.minLength ?? 0, maxLength: s.maxLength ?? 40 })
        .filter((v) => !/[\uD800-\uDFFF]/u.test(v) && (s.pattern === undefined || new RegExp(s.pattern, 'u').test(v)))
    case 'integer':
      if (s.format === 'int64') {
        return fc.oneof(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), fc.constantFrom(INT64_MIN, INT64_MAX, 0n, 2n ** 53n + 1n))
      }
      return fc.integer({ min: s.minimum ?? -(2 ** 31), max: s.maximum ?? 2 ** 31 - 1 })
    default:
      throw new Error(`schema type ${String(s.type)} is not generated`)
  }
}

/** JSON with bigints written as their exact digits (int64 beyond 2^53). */
function toJson (v: unknown): string {
  if (typeof v === 'bigint') return v.toString()
  if (Array.isArray(v)) return `[${v.map(toJson).join(',')}]`
  if (v !== null && typeof v === 'object') {
    return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(',')}}`
  }
  return JSON.stringify(v)
}

const caseFlip = (s: string): string => s[0]!.toUpperCase() + s.slice(1)

/** Ways to break one rule of a valid object for schema `s`. */
function objectMutations (doc: Json, schema: Json): fc.Arbitrary<(v: Json) => Json> {
  const s = deref(doc, schema)
  const props = s.properties as Record<string, Json>
  const muts: Array<fc.Arbitrary<(v: Json) => Json>> = []
  const required: string[] = s.required ?? []
  if (required.length > 0) {
    muts.push(fc.constantFrom(...required).map((k) => (v: Json) => { const c = { ...v }; delete c[k]; return c }))
  }
  if (s.additionalProperties === false) {
    muts.push(fc.constantFrom('id', 'extra', 'Name', 'tags').filter((k) => !(k in props)).map((k) => (v: Json) => ({ ...v, [k]: 1 })))
  }
  for (const [k, p0] of Object.entries(props)) {
    const p = deref(doc, p0)
    const wrong: unknown[] = p.type === 'string' ? [1, true, null, ['x'], {}] : ['1', 1.5, true, null, [1]]
    muts.push(fc.constantFrom(...wrong).map((w) => (v: Json) => ({ ...v, [k]: w })))
    if (p.format === 'int64') muts.push(fc.constantFrom(INT64_MAX + 1n, INT64_MIN - 1n, 10n ** 30n).map((w) => (v: Json) => ({ ...v, [k]: w })))
    if (Array.isArray(p.enum)) muts.push(fc.constantFrom(...p.enum as string[]).map((e) => (v: Json) => ({ ...v, [k]: caseFlip(e) })))
    if (p.maxLength !== undefined) muts.push(fc.constant((v: Json) => ({ ...v, [k]: 'x'.repeat(p.maxLength + 1) })))
    if (p.minLength !== undefined && p.minLength > 0) muts.push(fc.constant((v: Json) => ({ ...v, [k]: '' })))
    if (p.pattern === '\\S') muts.push(fc.constantFrom(' ', '\t\n', '\u00a0').map((w) => (v: Json) => ({ ...v, [k]: w })))
  }
  return fc.oneof(...muts)
}

function assertDocumentedError (op: Json, res: { statusCode: number, body: string }, errorCodes: Record<string, { status: number }>, want: number): void {
  assert.equal(res.statusCode, want, res.body)
  assert.ok(String(res.statusCode) in op.responses, `${res.statusCode} not documented`)
  const body = JSON.parse(res.body)
  assert.equal(body.status, res.statusCode)
  assert.equal(errorCodes[body.code]?.status, res.statusCode, `code ${String(body.code)} does not belong to ${res.statusCode}`)
}

for (const store of STORES) {
  describe(`schema-driven checks from /openapi.json [${store}]`, () => {
    it('router and document list the same operations; no key / a bad key is 401 on every /v1 one; other methods 405 with Allow', async (t) => {
      const ta = await buildTestApp(t, { store })
      const doc = JSON.parse((await ta.app.inject({ method: 'GET', url: '/openapi.json' })).body)
      const ops = operations(doc)
      const documented = new Map<string, Set<string>>()
      for (const o of ops) {
        const p = o.path.replace(/\{([^}]+)\}/g, ':$1')
        documented.set(p, (documented.get(p) ?? new Set()).add(o.method))
      }
      const router = walkRouter(ta.app)
      const served = [...router.keys()].filter((p) => !isDocumentationRoute(p)).sort()
      assert.ok(served.length > 0, 'the router walk found no route')
      assert.deepEqual(served, [...documented.keys()].sort(), 'router paths and documented paths differ')
      for (const [p, methods] of documented) {
        // Fastify adds HEAD to every GET route; HEAD is not a separate operation of the document.
        const expected = new Set(methods)
        if (methods.has('GET')) expected.add('HEAD')
        assert.deepEqual([...router.get(p)!].sort(), [...expected].sort(), `methods of ${p}`)
      }

      let unauth = 0
      let notAllowed = 0
      const sample = (path: string): string => path.replace(/\{[^}]+\}/g, '1')
      for (const o of ops) {
        if (!o.path.startsWith('/v1/')) continue
        assert.ok((o.op.security ?? doc.security).length > 0, `${o.method} ${o.path} is documented without security`)
        for (const headers of [{}, { authorization: 'Bearer pk_not_a_real_key_0000000000000000' }]) {
          const res = await ta.app.inject({ method: o.method as 'GET', url: sample(o.path), headers, ...(o.method === 'POST' ? { payload: '{}', headers: { ...headers, 'content-type': 'application/json' } } : {}) })
          assertDocumentedError(o.op, res, doc.components.schemas.Error['x-error-codes'], 401)
          const challenge = String(res.headers['www-authenticate'])
          assert.match(challenge, /^Bearer realm=/)
          if ('authorization' in headers) assert.match(challenge, /error="invalid_token"/)
          unauth++
        }
      }
      for (const [p, methods] of documented) {
        const allow = [...methods, ...(methods.has('GET') ? ['HEAD'] : [])].sort().join(', ')
        for (const method of METHODS.filter((m) => !methods.has(m))) {
          const res = await ta.app.inject({ method, url: sample(p.replace(/:[^/]+/g, '{x}')), headers: ta.auth })
          assert.equal(res.statusCode, 405, `${method} ${p}: ${res.body}`)
          assert.equal(res.headers.allow, allow, `Allow of ${p}`)
          assert.equal(JSON.parse(res.body).code, 'method_not_allowed')
          notAllowed++
        }
      }
      t.diagnostic(`${store}: ${ops.length} operations = router; ${unauth} unauthenticated → 401; ${notAllowed} other methods → 405 with exact Allow`)
    })

    it('generated valid inputs get a documented 2xx; each broken once gets a documented 4xx Error', async (t) => {
      const ta = await buildTestApp(t, { store })
      const doc = JSON.parse((await ta.app.inject({ method: 'GET', url: '/openapi.json' })).body)
      const errorCodes = doc.components.schemas.Error['x-error-codes']
      const ops = operations(doc)
      const counts = { accepted: 0, rejected: 0 }
      const ids: string[] = []

      const send = async (o: Op, url: string, body?: string) => await ta.app.inject({
        method: o.method as 'GET',
        url,
        headers: { ...ta.auth, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { payload: body } : {})
      })
      const assert2xx = (o: Op, res: { statusCode: number, body: string }): void => {
        assert.ok(res.statusCode >= 200 && res.statusCode < 300, `${o.method} ${o.path}: ${res.statusCode} ${res.body}`)
        assert.ok(String(res.statusCode) in o.op.responses, `${res.statusCode} not documented for ${o.method} ${o.path}`)
        counts.accepted++
      }

      // Bodies first: the pets they create are the valid path parameters of the reads.
      const ordered = [...ops].sort((a, b) => Number(b.op.requestBody !== undefined) - Number(a.op.requestBody !== undefined))
      for (const o of ordered) {
        // An operation with no documented 2xx (the unspecified GET /v1/store/orders) has no valid input.
        if (!Object.keys(o.op.responses).some((s) => s.startsWith('2'))) continue
        const params: Json[] = o.op.parameters ?? []
        const query = params.filter((p) => p.in === 'query' && p.name !== 'cursor')
        const pathParams = params.filter((p) => p.in === 'path')
        const bodySchema = o.op.requestBody?.content?.['application/json']?.schema
        const queryModel: Record<string, fc.Arbitrary<unknown>> = Object.fromEntries(query.map((p) => [p.name, arbitrary(doc, p.schema)]))
        const queryArb: fc.Arbitrary<Json> = fc.record(queryModel, { requiredKeys: query.filter((p) => p.required === true).map((p): string => p.name) as never[] })
        const bodyArb = bodySchema !== undefined ? arbitrary(doc, bodySchema) : fc.constant(undefined)
        const urlOf = (q: Json, pathValues: Record<string, string>): string => {
          const path = o.path.replace(/\{([^}]+)\}/g, (_, n: string) => encodeURIComponent(pathValues[n]!))
          const qs = new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)])).toString()
          return qs === '' ? path : `${path}?${qs}`
        }
        // A path parameter valid by schema names no pet unless a create returned it.
        const pathArb = pathParams.length === 0
          ? fc.constant({})
          : fc.constantFrom(...ids).map((id) => Object.fromEntries(pathParams.map((p) => [p.name, id])))

        await fc.assert(fc.asyncProperty(queryArb, bodyArb, pathArb, async (q, b, pv) => {
          const res = await send(o, urlOf(q, pv), b === undefined ? undefined : toJson(b))
          assert2xx(o, res)
          if (o.method === 'POST') ids.push(String(/"id":(-?\d+)/.exec(res.body)![1]))
        }), { numRuns: RUNS })

        // Invalid data: one rule broken at a time, in the body, a query parameter or a path parameter.
        const invalid: Array<fc.Arbitrary<{ url: string, body?: string }>> = []
        if (bodySchema !== undefined) {
          invalid.push(fc.tuple(bodyArb, objectMutations(doc, bodySchema), pathArb)
            .map(([b, mutate, pv]) => ({ url: urlOf({}, pv), body: toJson(mutate(b as Json)) })))
        }
        for (const p of query) {
          const s = deref(doc, p.schema)
          const bad: string[] = ['', 'x', '1.5', '1e3']
          if (s.maximum !== undefined) bad.push(String(s.maximum + 1), String(s.minimum - 1))
          if (Array.isArray(s.enum)) bad.push(...(s.enum as string[]).map(caseFlip))
          invalid.push(fc.tuple(fc.constantFrom(...bad), pathArb).map(([v, pv]) => ({ url: `${urlOf({}, pv)}?${p.name}=${encodeURIComponent(v)}` })))
        }
        if (query.length > 0) invalid.push(pathArb.map((pv) => ({ url: `${urlOf({}, pv)}?unknownParameter=1` })))
        for (const p of pathParams) {
          const bad = ['x', '1.5', String(INT64_MAX + 1n), String(INT64_MIN - 1n), '0x10', ' 1']
          invalid.push(fc.constantFrom(...bad).map((v) => ({ url: urlOf({}, { [p.name]: v }) })))
        }
        if (invalid.length === 0) continue
        await fc.assert(fc.asyncProperty(fc.oneof(...invalid), async ({ url, body }) => {
          const res = await send(o, url, body)
          assertDocumentedError(o.op, res, errorCodes, 400)
          counts.rejected++
        }), { numRuns: RUNS })
      }
      t.diagnostic(`${store}: ${counts.accepted} generated valid requests → documented 2xx; ${counts.rejected} one-rule-broken requests → documented 400 Error`)
    })
  })
}
