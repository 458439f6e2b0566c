import { randomBytes } from 'node:crypto'
import { isDeepStrictEqual } from 'node:util'
import { attempt, ConformanceError, escapePointer, resolveRef, ResponseChecker, type Operation } from './response-check.js'
import { RawConnection, send, Unexpected, type Answer, type Target } from './wire.js'

/*
 * The checks of `petstore conformance` (docs/how-to/check-a-deployment.md): a live deployment,
 * reached from outside, against the OpenAPI document it serves. Every expectation comes from that
 * document (operations, parameters and their schemas, statuses, required headers, bodies, the error
 * catalogue); what the document says only in words (the X-Request-Id echo, deprecation headers on
 * every answer of a deprecated operation, RateLimit pairs, HTTP/1.1 framing) is checked as described
 * there. Read-only unless `write` is set: nothing sent could change data, and the requests that
 * could (415, 413) carry bodies the service refuses before reading them.
 */

type Json = Record<string, any>

export interface CheckOptions {
  target: Target
  key: string
  /** The document this CLI ships (openapi/openapi.json). */
  shipped: Json
  /** Also create pets (named with NAME_PREFIX) and check the answers. */
  write: boolean
  /** At most this many pages are walked through the cursor. */
  maxPages: number
  /** The largest request body any deployment accepts: one byte more must get 413. */
  largestBodyLimit: number
}

export interface CheckResult {
  id: string
  outcome: 'passed' | 'failed' | 'skipped'
  /** For a failure: the request and status it concerns (when there was one), what the document promises and what came back. */
  where?: string
  expected?: string
  got?: string
  /** For a skip: why the check could not run. */
  reason?: string
}

export const NAME_PREFIX = 'conformance-check-'

class Skipped extends Error {}

/** The first request that carried the key was answered 401 or 403: every check that needs it would fail the same way, so the run ends. */
export class KeyRefused extends Error {}

const lower = (h: Answer['headers'], name: string): string | undefined => {
  const v = h[name.toLowerCase()]
  return Array.isArray(v) ? v.join(', ') : v
}

/** An answer not as expected: `where` names its request and status. */
const unexpected = (res: Answer, expected: string, got: string): Unexpected => new Unexpected(expected, got, `${res.method} ${res.url} → ${res.status}`)

/** The first pointer at which two JSON values differ. */
function firstDifference (a: unknown, b: unknown, at = ''): string | undefined {
  if (isDeepStrictEqual(a, b)) return undefined
  if (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && Array.isArray(a) === Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference((a as Json)[k], (b as Json)[k], `${at}/${escapePointer(k)}`)
      if (d !== undefined) return d
    }
  }
  return at === '' ? '/' : at
}

export async function checkDeployment (opts: CheckOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = []
  const run = async (id: string, body: () => Promise<void>): Promise<void> => {
    try {
      await body()
      results.push({ id, outcome: 'passed' })
    } catch (err) {
      if (err instanceof KeyRefused) throw err
      if (err instanceof Skipped) results.push({ id, outcome: 'skipped', reason: err.message })
      else if (err instanceof Unexpected) results.push({ id, outcome: 'failed', where: err.where, expected: err.expected, got: err.got })
      else if (err instanceof ConformanceError) results.push({ id, outcome: 'failed', where: err.where, expected: 'an answer as the document describes it', got: err.drift })
      else results.push({ id, outcome: 'failed', expected: 'an answer', got: (err as Error).message })
    }
  }
  const { target } = opts
  const runId = randomBytes(4).toString('hex')
  let requests = 0
  const requestId = (): string => `${NAME_PREFIX}${runId}-${++requests}`

  // The document: served at /openapi.json, compared with the one this CLI ships.
  let document = opts.shipped
  const answer = await send(target, 'GET', '/openapi.json', { accept: 'application/json' }).catch((err: Error) => err)
  await run('document', async () => {
    if (answer instanceof Error) throw new Unexpected('an answer', answer.message, `GET ${new URL('/openapi.json', target.base).href}`)
    if (answer.status !== 200) throw unexpected(answer, '200 with the OpenAPI document', `${answer.status}`)
    const type = lower(answer.headers, 'content-type')?.split(';')[0]?.trim()
    if (type !== 'application/json') throw unexpected(answer, 'Content-Type application/json', String(type))
    const served = attempt((): Json | null => JSON.parse(answer.body))
    if (served === undefined) throw unexpected(answer, 'a JSON document', `${JSON.stringify(answer.body.slice(0, 60))}`)
    if (typeof served?.openapi !== 'string' || typeof served.paths !== 'object') throw unexpected(answer, 'an OpenAPI document', 'JSON without openapi and paths')
    document = served
    const differs = firstDifference(served, opts.shipped)
    if (differs !== undefined) throw unexpected(answer, `the document this CLI ships (info.version ${String(opts.shipped.info?.version)})`, `one that differs at ${differs} (info.version ${String(served.info?.version)}); the served document's promises are checked`)
  })

  // Nothing answers there: every other check would say the same.
  if (answer instanceof Error) return results

  const checker = new ResponseChecker(document, { source: 'the served document', refuseUndocumentedHeaders: false })
  const ops = checker.operations
  const secured = (op: Json): boolean => ((op.security ?? document.security ?? []) as Json[]).some(req => Object.keys(req).length > 0)
  const params = (op: Operation): Json[] => {
    const item = (document.paths as Json)[op.template] as Json
    return [...(item.parameters ?? []), ...(op.op.parameters ?? [])].map((p: Json) => resolveRef(document, p))
  }
  const auth = { authorization: `Bearer ${opts.key}` }
  let keyTried = false

  /** A request whose answer is checked against the document, then against `expected` statuses. */
  const call = async (method: string, url: string, headers: Record<string, string>, expected: number[], body?: string | Buffer, describe?: string): Promise<Answer> => {
    const res = await send(target, method, url, { 'x-request-id': requestId(), ...headers }, body)
    if (!keyTried && headers.authorization !== undefined) {
      keyTried = true
      if (res.status === 401 || res.status === 403) throw new KeyRefused(`the deployment refused the key: ${method} ${url} → ${res.status}${errorCode(res)}`)
    }
    if (!expected.includes(res.status)) throw unexpected(res, describe ?? `status ${expected.join(' or ')}`, `${res.status}${errorCode(res)}`)
    checker.check(res)
    return res
  }

  // Ids of the pets the store lists, for the operations that read one (and a missing id).
  const listed: string[] = []
  const listOp = ops.find(o => o.method === 'GET' && params(o).some(p => p.in === 'query' && p.name === 'cursor'))
  const itemOp = ops.find(o => o.method === 'GET' && params(o).some(p => p.in === 'path'))
  const createOp = ops.find(o => o.method === 'POST' && o.op.requestBody !== undefined)
  const idParam = itemOp === undefined ? undefined : params(itemOp).find(p => p.in === 'path')
  const itemPath = (id: string): string => itemOp!.path.replace(`{${String(idParam!.name)}}`, encodeURIComponent(id))

  // --write: create a pet first, so the reads below have one.
  if (opts.write && createOp !== undefined) {
    const id = createOp.op.operationId as string
    const name = `${NAME_PREFIX}${runId}`
    const media = Object.keys(createOp.op.requestBody.content as Json)[0]!
    const schema = resolveRef(document, createOp.op.requestBody.content[media].schema as Json)
    const newPet = { ...((schema.examples as Json[] | undefined)?.[0] ?? {}), name }
    const idempotency = params(createOp).find(p => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')
    const created = success(createOp.op)
    // The same request each time: with an Idempotency-Key, the second is a replay of the first.
    const create = async (): Promise<Answer> => await call('POST', createOp.path, { ...auth, 'content-type': media, ...(idempotency === undefined ? {} : { 'idempotency-key': `${NAME_PREFIX}${runId}` }) }, [created], JSON.stringify(newPet))
    let first: Answer | undefined
    await run(`${id} ${created}`, async () => {
      first = await create()
      const body = JSON.parse(first.body) as Json
      for (const [k, v] of Object.entries(newPet)) {
        if (!isDeepStrictEqual(body[k], v)) throw unexpected(first, `${k} ${JSON.stringify(v)} as sent`, JSON.stringify(body[k]))
      }
    })
    if (first !== undefined) {
      const location = lower(first.headers, 'location')
      const createdBody = JSON.parse(first.body) as Json
      await run(`${id} Location readable`, async () => {
        if (location === undefined) throw unexpected(first!, 'a Location header', 'none')
        const read = await call('GET', new URL(location, target.base).pathname, auth, [200])
        if (!isDeepStrictEqual(JSON.parse(read.body), createdBody)) throw new Unexpected(`the created pet ${JSON.stringify(createdBody)}`, read.body.slice(0, 200), `GET ${location} → 200`)
      })
      if (idempotency !== undefined) {
        await run(`${id} Idempotency-Key replay`, async () => {
          const again = await create()
          const where = `POST ${createOp.path} (same Idempotency-Key) → ${again.status}`
          if (lower(again.headers, 'idempotent-replayed') !== 'true') throw new Unexpected('Idempotent-Replayed: true', String(lower(again.headers, 'idempotent-replayed') ?? 'no such header'), where)
          if (!isDeepStrictEqual(JSON.parse(again.body), createdBody)) throw new Unexpected(`the first answer's body ${first!.body.slice(0, 120)}`, again.body.slice(0, 120), where)
          if (lower(again.headers, 'location') !== location) throw new Unexpected(`Location ${String(location)}`, String(lower(again.headers, 'location')), where)
        })
      }
    }
  }

  // Every GET operation, as a client first calls it.
  for (const o of ops.filter(o => o.method === 'GET' && o !== itemOp)) {
    const id = String(o.op.operationId ?? `${o.method} ${o.template}`)
    await run(id, async () => {
      const expected = expectedStatus(o.op)
      const res = await call('GET', o.path, secured(o.op) ? auth : {}, expected.codes, undefined, expected.describe)
      if (o === listOp && res.status === 200) for (const pet of JSON.parse(res.body) as Json[]) listed.push(String(pet.id))
    })
  }

  // The list: limit, filters, the cursor walk.
  if (listOp !== undefined) {
    const id = listOp.op.operationId as string
    const listParams = params(listOp)
    const limit = listParams.find(p => p.in === 'query' && p.name === 'limit')
    const pageSize = limit === undefined ? undefined : Math.min(2, Number(limit.schema?.maximum ?? 2))
    if (pageSize !== undefined) {
      await run(`${id} limit=${pageSize}`, async () => {
        const url = `${listOp.path}?limit=${pageSize}`
        const res = await call('GET', url, auth, [200])
        const n = (JSON.parse(res.body) as Json[]).length
        if (n > pageSize) throw unexpected(res, `at most ${pageSize} items`, `${n}`)
      })
    }
    for (const filter of listParams.filter(p => p.in === 'query' && Array.isArray(p.schema?.enum))) {
      for (const value of filter.schema.enum as string[]) {
        await run(`${id} ${String(filter.name)}=${value}`, async () => {
          const url = `${listOp.path}?${String(filter.name)}=${encodeURIComponent(value)}`
          const res = await call('GET', url, auth, [200])
          const other = (JSON.parse(res.body) as Json[]).find(p => filter.name in p && p[filter.name] !== value)
          if (other !== undefined) throw unexpected(res, `only items with ${String(filter.name)} ${value}`, JSON.stringify(other).slice(0, 200))
        })
      }
    }
    await run(`${id} cursor walk`, async () => {
      const seen = new Set<string>()
      let url = `${listOp.path}${pageSize === undefined ? '' : `?limit=${pageSize}`}`
      for (let page = 0; page < opts.maxPages; page++) {
        const res = await call('GET', url, auth, [200])
        for (const pet of JSON.parse(res.body) as Json[]) {
          const pid = String(pet.id)
          if (seen.has(pid)) throw unexpected(res, 'each item once across the pages', `id ${pid} again`)
          seen.add(pid)
          if (!listed.includes(pid)) listed.push(pid)
        }
        const next = /<([^>]*)>;\s*rel="next"/.exec(lower(res.headers, 'link') ?? '')?.[1]
        if (next === undefined) break
        const nextUrl = new URL(next, new URL(url, target.base))
        if (nextUrl.origin !== new URL(target.base).origin && !next.startsWith('/')) throw unexpected(res, 'a next link on this deployment', next)
        url = nextUrl.pathname + nextUrl.search
      }
    })
  }

  // One item: a listed one, a missing one.
  const missing = missingId((idParam?.schema ?? {}) as Json, new Set(listed))
  if (itemOp !== undefined && idParam !== undefined) {
    const id = itemOp.op.operationId as string
    await run(id, async () => {
      const petId = listed[0]
      if (petId === undefined) throw new Skipped(`the deployment lists no item to read${opts.write ? '' : ' (--write creates one)'}`)
      const res = await call('GET', itemPath(petId), auth, [success(itemOp.op)])
      const body = JSON.parse(res.body) as Json
      if (String(body.id) !== petId) throw unexpected(res, `the item with id ${petId}`, res.body.slice(0, 200))
    })
    if ('404' in itemOp.op.responses) await run(`${id} missing id`, async () => { await call('GET', itemPath(missing), auth, [404]) })
    if (itemOp.op.deprecated === true) {
      // Every answer of a deprecated operation carries what the document requires of it (Deprecation,
      // Sunset, the successor Link): checked on each answer above; here the 404 again, by name.
      await run(`${id} deprecation headers`, async () => {
        const res = await send(target, 'GET', itemPath(missing), auth)
        const response = resolveRef(document, (itemOp.op.responses[String(res.status)] ?? {}) as Json)
        const required = Object.entries((response.headers ?? {}) as Json).filter(([name, h]) => resolveRef(document, h as Json).required === true && name.toLowerCase() !== 'x-request-id')
        for (const [name] of required) {
          if (lower(res.headers, name) === undefined) throw unexpected(res, `header ${name} (the document requires it on this deprecated operation)`, 'no such header')
        }
      })
    }
  }

  // Conditional requests: an answer's ETag sent back in If-None-Match gets 304 without a body.
  for (const o of ops.filter(o => o.method === 'GET' && '304' in (o.op.responses as Json))) {
    const id = String(o.op.operationId)
    await run(`${id} If-None-Match → 304`, async () => {
      const url = o === itemOp ? (listed[0] === undefined ? undefined : itemPath(listed[0])) : o.path
      if (url === undefined) throw new Skipped('no item to read')
      const first = await call('GET', url, auth, [success(o.op)])
      const etag = lower(first.headers, 'etag')
      if (etag === undefined) throw unexpected(first, 'an ETag header', 'none')
      const again = await call('GET', url, { ...auth, 'if-none-match': etag }, [304])
      if (again.body !== '') throw unexpected(again, 'no body with 304', `${again.body.length} bytes`)
      if (lower(again.headers, 'etag') !== etag) throw unexpected(again, `ETag ${etag}`, String(lower(again.headers, 'etag')))
    })
  }

  // Without a key: 401 and the bearer challenge.
  for (const o of ops.filter(o => secured(o.op) && '401' in (o.op.responses as Json) && o.method === 'GET')) {
    const url = o === itemOp ? itemPath(listed[0] ?? '1') : o.path
    await run(`${String(o.op.operationId)} without a key → 401`, async () => { await call(o.method, url, {}, [401]) })
  }

  // A malformed parameter: 400.
  for (const o of ops.filter(o => o.method === 'GET' && '400' in (o.op.responses as Json))) {
    for (const p of params(o).filter(p => p.in === 'query' || p.in === 'path')) {
      const bad = invalidValue(p.schema as Json | undefined)
      if (bad === undefined) continue
      const url = p.in === 'path'
        ? o.path.replace(`{${String(p.name)}}`, encodeURIComponent(bad))
        : `${o.path.replace(/\{[^}]+\}/g, listed[0] ?? '1')}?${String(p.name)}=${encodeURIComponent(bad)}`
      await run(`${String(o.op.operationId)} ${String(p.name)}=${bad.length > 20 ? `${bad.slice(0, 12)}…(${bad.length})` : bad} → 400`, async () => { await call('GET', url, auth, [400]) })
    }
  }

  // A method the path does not have: 405 with Allow naming the ones it has.
  const unrouted = (document['x-unrouted-requests']?.responses ?? {}) as Json
  if ('405' in unrouted) {
    for (const [template, same] of Map.groupBy(ops, o => o.template)) {
      const path = same[0]!.path.replace(/\{[^}]+\}/g, listed[0] ?? '1')
      const has = same.map(o => o.method)
      const other = ['DELETE', 'PUT', 'PATCH'].find(m => !has.includes(m))
      if (other === undefined) continue
      await run(`${other} ${template} → 405`, async () => {
        const res = await call(other, path, auth, [405])
        const allow = (lower(res.headers, 'allow') ?? '').split(',').map(s => s.trim())
        const missingMethods = [...has, ...(has.includes('GET') ? ['HEAD'] : [])].filter(m => !allow.includes(m))
        if (missingMethods.length > 0) throw unexpected(res, `Allow naming ${has.join(', ')}`, `Allow: ${lower(res.headers, 'allow') ?? '(none)'}`)
      })
    }
  }

  // Bodies the service refuses before reading them (nothing is written).
  for (const o of ops.filter(o => o.op.requestBody !== undefined)) {
    const id = String(o.op.operationId)
    if ('415' in (o.op.responses as Json)) {
      await run(`${id} text/plain → 415`, async () => { await call(o.method, o.path, { ...auth, 'content-type': 'text/plain' }, [415], 'conformance check') })
    }
    if ('413' in (o.op.responses as Json)) {
      // An object padded with spaces past any deployment's body limit; were it read, it would be
      // refused as invalid (400/422), never stored.
      const body = Buffer.from(`{${' '.repeat(opts.largestBodyLimit - 1)}}`)
      // Sent with Expect: 100-continue, as a client sends a large body: the service answers from the
      // headers alone, so the body is never sent.
      await run(`${id} body of ${body.length} bytes → 413`, async () => { await call(o.method, o.path, { ...auth, 'content-type': 'application/json', 'content-length': String(body.length), expect: '100-continue' }, [413], body) })
    }
  }

  // Headers described in words.
  if (listOp !== undefined) {
    await run('X-Request-Id echoed', async () => {
      const sent = `${NAME_PREFIX}${runId}-echo`
      const res = await send(target, 'GET', listOp.path, { ...auth, 'x-request-id': sent })
      const got = lower(res.headers, 'x-request-id')
      if (got !== sent) throw unexpected(res, `X-Request-Id: ${sent} (the client's own id, echoed)`, got === undefined ? 'no X-Request-Id' : `X-Request-Id: ${got}`)
    })
    const documented = Object.keys((listOp.op.responses['200']?.headers ?? {}) as Json)
    const pair = ['RateLimit', 'RateLimit-Policy'].filter(h => documented.includes(h))
    if (pair.length === 2) {
      await run('RateLimit headers', async () => {
        // Rate limits may be turned off; when on, both headers come on every answer to a key.
        const answers = [await send(target, 'GET', listOp.path, auth), await send(target, 'GET', `${listOp.path}?limit=1`, auth)]
        const any = answers.some(a => pair.some(h => lower(a.headers, h) !== undefined))
        for (const [i, a] of answers.entries()) {
          const absent = pair.filter(h => lower(a.headers, h) === undefined)
          if (any && absent.length > 0) throw new Unexpected(`${pair.join(' and ')} on every answer once one carries them`, `${absent.join(', ')} missing`, `GET ${listOp.path} (answer ${i + 1}) → ${a.status}`)
        }
        for (const a of answers) {
          const rl = lower(a.headers, 'ratelimit')
          if (rl !== undefined && !/;\s*r=\d+/.test(rl)) throw new Unexpected('RateLimit with r=<remaining> (IETF RateLimit draft)', rl, `GET ${listOp.path} → ${a.status}`)
        }
      })
    }

    // HTTP/1.1 framing on one kept-alive raw connection: a large page, HEAD, an error, then close.
    await run('HTTP/1.1 framing and keep-alive', async () => {
      const conn = await RawConnection.open(target)
      try {
        const host = target.base.host
        const limit = params(listOp).find(p => p.name === 'limit')
        const big = `${listOp.path}${limit?.schema?.maximum === undefined ? '' : `?limit=${String(limit.schema.maximum)}`}`
        const head = (method: string, url: string, extra = ''): string => `${method} ${url} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${opts.key}\r\nAccept: application/json\r\n${extra}\r\n`
        const steps: Array<[string, string]> = [['GET', big], ['HEAD', big], ['GET', itemOp === undefined ? listOp.path : itemPath(missing)]]
        for (const [method, url] of steps) {
          conn.socket.write(head(method, url))
          const res = await conn.read(method)
          const where = `${method} ${url} → ${res.status} (raw connection)`
          if (method === 'HEAD') {
            // Whatever follows the head must be the next answer: a HEAD answer with a body shows up there.
            if (conn.leftover().length > 0) throw new Unexpected('no body after a HEAD answer', `${conn.leftover().length} bytes`, where)
          } else {
            if (res.framing === 'close') throw new Unexpected('Content-Length or chunked framing (the connection kept open)', 'a body delimited by closing the connection', where)
            const type = res.headers.get('content-type')?.split(';')[0]?.trim()
            if (type === 'application/json' && attempt(() => JSON.parse(res.body.toString('utf8'))) === undefined) {
              throw new Unexpected(`a complete JSON body (${res.framing})`, `${res.body.length} bytes that do not parse`, where)
            }
          }
          if (/\bclose\b/i.test(res.headers.get('connection') ?? '')) throw new Unexpected('the connection kept alive (HTTP/1.1 default)', 'Connection: close', where)
        }
        conn.socket.write(head('GET', listOp.path, 'Connection: close\r\n'))
        await conn.read('GET')
        const extra = await conn.untilClosed()
        if (extra.length > 0) throw new Unexpected('nothing after the last answer', `${extra.length} more bytes`, `GET ${listOp.path} (raw connection)`)
      } finally {
        conn.socket.destroy()
      }
    })
  }

  return results
}

/** The success status the document lists for an operation: its lowest 2xx (an object's integer-like keys come in ascending order). */
function success (op: Json): number {
  return Number(Object.keys(op.responses as Json).find(s => /^2\d\d$/.test(s)) ?? 200)
}

/** A 2xx the document lists; for an operation without one (not implemented yet), a documented answer that is not a server failure. */
function expectedStatus (op: Json): { codes: number[], describe: string } {
  const codes = Object.keys(op.responses as Json).filter(s => /^\d{3}$/.test(s)).map(Number)
  const ok = codes.filter(s => s >= 200 && s < 300)
  if (ok.length > 0) return { codes: ok, describe: `status ${ok.join(' or ')}` }
  const answered = codes.filter(s => s < 500 || s === 501)
  return { codes: answered, describe: `a documented status other than a server failure (${answered.join(', ')})` }
}

/** A value the parameter's schema refuses, when one follows from it. */
function invalidValue (schema: Json | undefined): string | undefined {
  if (Array.isArray(schema?.enum)) return `${NAME_PREFIX}not-a-value`
  if (schema?.type === 'integer') return typeof schema.maximum === 'number' ? String(schema.maximum + 1) : 'x'
  if (schema?.type === 'string' && typeof schema.maxLength === 'number') return 'x'.repeat(schema.maxLength + 1)
  return undefined
}

/** An id no listed item has, within the schema's range. */
function missingId (schema: Json, taken: Set<string>): string {
  let id = schema.format === 'int64' ? 9223372036854775807n : BigInt(Number.MAX_SAFE_INTEGER)
  if (typeof schema.maximum === 'number') id = BigInt(schema.maximum)
  while (taken.has(String(id))) id--
  return String(id)
}

function errorCode (res: Answer): string {
  const code = attempt((): Json | null => JSON.parse(res.body))?.code
  return typeof code === 'string' ? ` (${code})` : ''
}
