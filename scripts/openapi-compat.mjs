// `npm run openapi:compat`: compares the current OpenAPI document (openapi/openapi.json) against the
// newest released one (openapi/released/<version>.json) and exits 1 on a change that breaks a client
// written against the release (docs/reference/compatibility.md says which changes those are), unless
// the current info.version raises the major version, or the change is listed with its reason in
// openapi/compatibility-exceptions.json. A listed exception that no longer matches a change fails too.
// A document that differs from the release in more than its prose (an addition) must raise
// info.version's minor at least: only a patch may leave the minor as released.
//
// Written here rather than taken from npm: the OpenAPI diff tools on npm either refuse OpenAPI 3.1
// (openapi-diff: "Swagger Parser only supports versions 3.0.x"), fail to load (@useoptic/optic: its
// ruleset dependencies do not compile under the Ajv they resolve to), or download a Go binary when
// installed (@pb33f/openapi-changes, and oasdiff's wrappers). This check reads the parts of OpenAPI 3.1
// and JSON Schema this document uses (operations, parameters, request bodies, responses and their
// headers, security requirements; type, enum, const, bounds, lengths, pattern, format, items,
// properties, required, additionalProperties, anyOf/oneOf, $ref) and reports what it cannot judge (a
// changed pattern) as a change for a person to decide.
//
//   node scripts/openapi-compat.mjs [--base FILE] [--current FILE] [--exceptions FILE] [--json]
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('../', import.meta.url))
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']
/** The integer range each OpenAPI integer format stands for. */
const FORMAT_RANGE = { int32: [-(2 ** 31), 2 ** 31 - 1], int64: [-(2 ** 63), 2 ** 63 - 1] }

/** `[major, minor, patch]` of a version string, or undefined when it is not one. */
export function parseVersion (v) {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(String(v))
  return m === null ? undefined : [Number(m[1]), Number(m[2]), Number(m[3])]
}

const byVersion = (a, b) => {
  const [x, y] = [parseVersion(a), parseVersion(b)]
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]
}

/** The newest released document in `dir` (files named <major>.<minor>.<patch>.json). */
export function newestRelease (dir) {
  const versions = readdirSync(dir).map(f => f.replace(/\.json$/, '')).filter(v => parseVersion(v) !== undefined).sort(byVersion)
  if (versions.length === 0) throw new Error(`no released document in ${dir}`)
  return `${dir}/${versions.at(-1)}.json`
}

/**
 * The changes from `base` to `current` that break a client written against `base`, each
 * `{ id, detail }`: `id` names the place and the change (what an exception lists), `detail` says more.
 */
export function breakingChanges (base, current) {
  const found = new Map()
  const report = (where, what, detail = '') => {
    const id = `${where}: ${what}`
    if (!found.has(id)) found.set(id, { id, detail })
  }

  /** Resolves a local $ref: the schema and the name it is reported under. */
  const deref = (doc, schema, where) => {
    let s = schema
    let w = where
    for (let i = 0; s !== null && typeof s === 'object' && typeof s.$ref === 'string' && i < 20; i++) {
      const pointer = s.$ref.replace(/^#/, '')
      w = pointer.replace(/^\//, '').split('/').map(p => p.replace(/~1/g, '/').replace(/~0/g, '~')).join('/')
      s = pointer.split('/').slice(1).reduce((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc)
      if (s === undefined) throw new Error(`unresolved $ref ${schema.$ref}`)
    }
    return [s ?? {}, w]
  }

  const types = (s) => {
    if (s.type === undefined) return undefined
    const list = Array.isArray(s.type) ? s.type : [s.type]
    return list.includes('number') ? [...list, 'integer'] : list
  }
  const lower = (s) => Math.max(s.minimum ?? -Infinity, s.exclusiveMinimum === undefined ? -Infinity : s.exclusiveMinimum, FORMAT_RANGE[s.format]?.[0] ?? -Infinity)
  const upper = (s) => Math.min(s.maximum ?? Infinity, s.exclusiveMaximum === undefined ? Infinity : s.exclusiveMaximum, FORMAT_RANGE[s.format]?.[1] ?? Infinity)

  /**
   * Reports where schema `inner` (of document `innerDoc`) admits a value that `outer` (of `outerDoc`)
   * does not. For a request, inner is the released schema (what clients send) and outer the current
   * one (what the service now accepts); for a response the other way round. `side` names which.
   */
  function within (innerDoc, inner, outerDoc, outer, where, side, depth = 0) {
    if (depth > 40) return
    ;[inner, where] = deref(innerDoc, inner, where)
    const [o, outerWhere] = deref(outerDoc, outer, where)
    outer = o
    if (outerWhere !== where && side === 'response') where = outerWhere
    const at = `${where} (${side})`
    const innerAlternatives = inner.anyOf ?? inner.oneOf
    if (innerAlternatives !== undefined) {
      // A branch that another branch already admits adds nothing (an enum of codes next to any code).
      const kept = innerAlternatives.filter((b, i) => !innerAlternatives.some((other, j) => j !== i && quietlyWithin(innerDoc, b, other) && !(j > i && quietlyWithin(innerDoc, other, b))))
      const { anyOf, oneOf, ...rest } = inner
      for (const branch of kept) within(innerDoc, { ...rest, ...branch }, outerDoc, outer, where, side, depth + 1)
      return
    }
    const outerAlternatives = outer.anyOf ?? outer.oneOf
    if (outerAlternatives !== undefined) {
      const { anyOf, oneOf, ...rest } = outer
      if (!outerAlternatives.some(b => quietlyWithin2(innerDoc, inner, outerDoc, { ...rest, ...b }, side))) report(at, 'admits a value no alternative of the other document admits')
      return
    }
    // An enum of plain values is judged value by value against the other schema's rules.
    if (Array.isArray(inner.enum) && inner.enum.every(v => v === null || typeof v !== 'object')) {
      for (const v of inner.enum) {
        const why = refuses(outer, v)
        if (why === undefined) continue
        if (why === 'enum') report(at, side === 'request' ? `enum value ${JSON.stringify(v)} no longer accepted` : `may answer enum value ${JSON.stringify(v)}, not in the released enum`)
        else report(at, `enum value ${JSON.stringify(v)} ${side === 'request' ? 'no longer accepted' : 'not admitted by the released schema'}`, `its ${why}`)
      }
      return
    }
    const [ti, to] = [types(inner), types(outer)]
    if (to !== undefined) {
      const extra = ti === undefined ? ['any type'] : ti.filter(t => !to.includes(t))
      if (extra.length > 0) report(at, `type ${extra.join(', ')} no longer admitted`, `released ${JSON.stringify(side === 'request' ? inner.type : outer.type)}, current ${JSON.stringify(side === 'request' ? outer.type : inner.type)}`)
    }
    if (outer.const !== undefined && JSON.stringify(inner.const) !== JSON.stringify(outer.const)) report(at, `const ${JSON.stringify(outer.const)} ${side === 'request' ? 'added' : 'removed'}`)
    if (Array.isArray(outer.enum)) {
      if (!Array.isArray(inner.enum)) {
        report(at, side === 'request' ? 'now limited to an enum' : 'no longer limited to the released enum', `enum ${JSON.stringify(outer.enum)}`)
      } else {
        for (const v of inner.enum) {
          if (!outer.enum.some(x => JSON.stringify(x) === JSON.stringify(v))) report(at, side === 'request' ? `enum value ${JSON.stringify(v)} no longer accepted` : `may answer enum value ${JSON.stringify(v)}, not in the released enum`)
        }
      }
    }
    if (lower(inner) < lower(outer)) report(at, `minimum ${side === 'request' ? 'raised' : 'lowered'}`, `${lower(side === 'request' ? inner : outer)} → ${lower(side === 'request' ? outer : inner)}`)
    if (upper(inner) > upper(outer)) report(at, `maximum ${side === 'request' ? 'lowered' : 'raised'}`, `${upper(side === 'request' ? inner : outer)} → ${upper(side === 'request' ? outer : inner)}`)
    for (const [min, max, what] of [['minLength', 'maxLength', 'length'], ['minItems', 'maxItems', 'item count'], ['minProperties', 'maxProperties', 'property count']]) {
      if ((inner[min] ?? 0) < (outer[min] ?? 0)) report(at, `minimum ${what} ${side === 'request' ? 'raised' : 'lowered'}`, `${side === 'request' ? inner[min] ?? 0 : outer[min] ?? 0} → ${side === 'request' ? outer[min] : inner[min] ?? 0}`)
      if ((inner[max] ?? Infinity) > (outer[max] ?? Infinity)) report(at, `maximum ${what} ${side === 'request' ? (inner[max] === undefined ? `${outer[max]} added` : 'lowered') : 'raised or removed'}`, `${String(side === 'request' ? inner[max] ?? 'none' : outer[max])} → ${String(side === 'request' ? outer[max] : inner[max] ?? 'none')}`)
    }
    if (outer.pattern !== undefined && inner.pattern !== outer.pattern) {
      report(at, inner.pattern === undefined ? (side === 'request' ? `pattern ${outer.pattern} added` : 'pattern removed') : `pattern changed to ${side === 'request' ? outer.pattern : inner.pattern}`)
    }
    // A string format is a rule on the value; an integer format is its range (compared above).
    const stringFormat = (s) => (FORMAT_RANGE[s.format] === undefined ? s.format : undefined)
    if (stringFormat(outer) !== undefined && stringFormat(inner) !== stringFormat(outer)) report(at, `format ${side === 'request' ? `${outer.format} added or changed` : 'removed or changed'}`)
    if (inner.items !== undefined || outer.items !== undefined) within(innerDoc, inner.items ?? {}, outerDoc, outer.items ?? {}, `${where}[]`, side, depth + 1)
    // Objects: a required property the other side does not promise, and every property of both.
    const innerRequired = new Set(inner.required ?? [])
    for (const name of outer.required ?? []) {
      if (!innerRequired.has(name)) report(`${where}.${name} (${side})`, side === 'request' ? 'now required' : 'no longer always present')
    }
    const innerProps = inner.properties ?? {}
    const outerProps = outer.properties ?? {}
    for (const [name, schema] of Object.entries(innerProps)) {
      if (name in outerProps) within(innerDoc, schema, outerDoc, outerProps[name], `${where}.${name}`, side, depth + 1)
      else if (outer.additionalProperties === false && side === 'request') report(`${where}.${name} (${side})`, 'removed: a client that sends it is refused')
      // A response field the released document does not name: clients ignore fields they do not know.
    }
    if (side === 'request' && inner.additionalProperties !== false && outer.additionalProperties === false && outer.properties !== undefined) report(at, 'no longer accepts properties it does not name')
  }

  /** The keyword of scalar schema `s` that refuses `value`, or undefined when `s` admits it. */
  function refuses (s, value) {
    const t = value === null ? 'null' : Number.isInteger(value) ? 'integer' : typeof value
    const allowed = types(s)
    if (allowed !== undefined && !allowed.includes(t) && !(t === 'integer' && allowed.includes('number'))) return 'type'
    if (Array.isArray(s.enum) && !s.enum.some(x => x === value)) return 'enum'
    if (s.const !== undefined && s.const !== value) return 'const'
    if (typeof value === 'number' && (value < lower(s) || value > upper(s))) return 'range'
    if (typeof value === 'string') {
      const length = [...value].length
      if (length < (s.minLength ?? 0) || length > (s.maxLength ?? Infinity)) return 'length'
      if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(value)) return 'pattern'
    }
    return undefined
  }

  /** Whether `inner` admits nothing `outer` does not, both of one document; reports nothing. */
  function quietlyWithin (doc, inner, outer) {
    return quietlyWithin2(doc, inner, doc, outer, 'request')
  }

  function quietlyWithin2 (innerDoc, inner, outerDoc, outer, side) {
    const before = new Map(found)
    const size = found.size
    within(innerDoc, inner, outerDoc, outer, '', side)
    const clean = found.size === size
    found.clear()
    for (const [k, v] of before) found.set(k, v)
    return clean
  }

  const operations = (doc) => {
    const ops = new Map()
    for (const [path, item] of Object.entries(doc.paths ?? {})) {
      for (const method of METHODS) {
        if (item[method] !== undefined) ops.set(`${method.toUpperCase()} ${path}`, { op: item[method], shared: item.parameters ?? [] })
      }
    }
    return ops
  }
  const parameters = (doc, { op, shared }) => {
    const list = new Map()
    for (const p of [...shared, ...(op.parameters ?? [])]) {
      const [param] = deref(doc, p, '')
      list.set(`${param.in} ${param.in === 'header' ? param.name.toLowerCase() : param.name}`, param)
    }
    return list
  }
  const scopesOf = (doc, op) => op.security ?? doc.security ?? []

  const baseOps = operations(base)
  const currentOps = operations(current)
  for (const [name, b] of baseOps) {
    const c = currentOps.get(name)
    const label = `${name}${b.op.operationId === undefined ? '' : ` (${b.op.operationId})`}`
    if (c === undefined) {
      report(label, 'operation removed')
      continue
    }
    // What a client sends: parameters, body, credentials.
    const [bp, cp] = [parameters(base, b), parameters(current, c)]
    for (const [key, param] of bp) {
      const now = cp.get(key)
      if (now === undefined) {
        report(`${label} ${key}`, 'parameter removed')
        continue
      }
      if (now.required === true && param.required !== true) report(`${label} ${key}`, 'parameter now required')
      within(base, param.schema ?? {}, current, now.schema ?? {}, `${label} ${key}`, 'request')
    }
    for (const [key, param] of cp) {
      if (!bp.has(key) && param.required === true) report(`${label} ${key}`, 'new required parameter')
    }
    const [bb] = b.op.requestBody === undefined ? [undefined] : deref(base, b.op.requestBody, '')
    const [cb] = c.op.requestBody === undefined ? [undefined] : deref(current, c.op.requestBody, '')
    if (cb?.required === true && bb?.required !== true) report(`${label} request body`, 'now required')
    for (const [type, media] of Object.entries(bb?.content ?? {})) {
      const now = cb?.content?.[type]
      if (now === undefined) report(`${label} request body ${type}`, 'media type no longer accepted')
      else within(base, media.schema ?? {}, current, now.schema ?? {}, `${label} request body`, 'request')
    }
    // Credentials: each way of authenticating the release accepted must still be accepted.
    const [bs, cs] = [scopesOf(base, b.op), scopesOf(current, c.op)]
    const accepts = (alternative) => cs.length === 0 || cs.some(req => Object.entries(req).every(([scheme, scopes]) => scheme in alternative && scopes.every(s => alternative[scheme].includes(s))))
    for (const alternative of bs.length === 0 ? [{}] : bs) {
      if (!accepts(alternative)) report(label, `no longer accepts the credentials ${JSON.stringify(alternative)}`, `current security: ${JSON.stringify(cs)}`)
    }
    // What a client receives.
    for (const [status, r] of Object.entries(c.op.responses ?? {})) {
      const [response] = deref(current, r, '')
      const released = b.op.responses?.[status]
      if (released === undefined) {
        // A new error status carries the Error object every client already handles; a new success does not.
        if (/^[123]/.test(status)) report(`${label} ${status}`, 'new non-error status')
        continue
      }
      const [before] = deref(base, released, '')
      for (const [header, h] of Object.entries(before.headers ?? {})) {
        const [hb] = deref(base, h, '')
        const hc = Object.entries(response.headers ?? {}).find(([n]) => n.toLowerCase() === header.toLowerCase())?.[1]
        const [now] = hc === undefined ? [undefined] : deref(current, hc, '')
        if (hb.required === true && now?.required !== true) report(`${label} ${status} header ${header}`, 'no longer always sent')
        if (now !== undefined) within(current, now.schema ?? {}, base, hb.schema ?? {}, `${label} ${status} header ${header}`, 'response')
      }
      for (const [type, media] of Object.entries(response.content ?? {})) {
        const then = before.content?.[type]
        if (then === undefined) {
          if (Object.keys(before.content ?? {}).length > 0) report(`${label} ${status} ${type}`, 'new media type')
          continue
        }
        within(current, media.schema ?? {}, base, then.schema ?? {}, `${label} ${status} body`, 'response')
      }
      for (const type of Object.keys(before.content ?? {})) {
        if (response.content?.[type] === undefined) report(`${label} ${status} ${type}`, 'media type no longer sent')
      }
    }
  }
  // An error code keeps the status it is sent with (x-error-codes: the catalogue, by schema).
  for (const [name, schema] of Object.entries(base.components?.schemas ?? {})) {
    const [then, now] = [schema['x-error-codes'] ?? {}, current.components?.schemas?.[name]?.['x-error-codes'] ?? {}]
    for (const [code, entry] of Object.entries(then)) {
      if (now[code] !== undefined && now[code].status !== entry.status) report(`components/schemas/${name} x-error-codes ${code}`, `status changed from ${entry.status} to ${now[code].status}`)
    }
  }
  return [...found.values()]
}

/** Words for people, which a patch may change: what differs elsewhere is an addition or a break. */
const PROSE = new Set(['description', 'summary', 'title', 'example', 'examples', 'externalDocs', 'contact'])

/** The first pointer at which the two documents differ in more than prose, or undefined. */
export function firstContractDifference (a, b, at = '') {
  if (a === b) return undefined
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return at === '' ? '/' : at
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  for (const k of keys) {
    // Under `properties` the keys are field names, not prose.
    if (PROSE.has(k) && !Array.isArray(a) && !at.endsWith('/properties')) continue
    if (at === '/info' && k === 'version') continue
    const d = firstContractDifference(a[k], b[k], `${at}/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`)
    if (d !== undefined) return d
  }
  return undefined
}

/** Compares the files and says what it found; returns the exit code. */
export function main (argv = process.argv.slice(2), out = process.stdout, err = process.stderr) {
  const arg = (name, fallback) => {
    const i = argv.indexOf(name)
    return i === -1 ? fallback : argv[i + 1]
  }
  const basePath = arg('--base', undefined) ?? newestRelease(`${root}openapi/released`)
  const currentPath = arg('--current', `${root}openapi/openapi.json`)
  const exceptionsPath = arg('--exceptions', `${root}openapi/compatibility-exceptions.json`)
  const read = (p) => JSON.parse(readFileSync(p, 'utf8'))
  const [base, current] = [read(basePath), read(currentPath)]
  const [bv, cv] = [parseVersion(base.info?.version), parseVersion(current.info?.version)]
  if (bv === undefined || cv === undefined) {
    err.write(`info.version must be <major>.<minor>.<patch> in both documents (released ${String(base.info?.version)}, current ${String(current.info?.version)})\n`)
    return 1
  }
  if (byVersion(current.info.version, base.info.version) < 0) {
    err.write(`info.version ${current.info.version} is older than the released ${base.info.version}\n`)
    return 1
  }
  let exceptions = { against: base.info.version, accepted: [] }
  try {
    exceptions = read(exceptionsPath)
  } catch (e) {
    if (/** @type {NodeJS.ErrnoException} */ (e).code !== 'ENOENT') throw e
  }
  const accepted = exceptions.against === base.info.version ? exceptions.accepted : []
  const changes = breakingChanges(base, current)
  const newMajor = cv[0] > bv[0]
  const unexplained = changes.filter(c => !accepted.some(a => a.change === c.id))
  const stale = accepted.filter(a => !changes.some(c => c.id === a.change))
  // An addition (any change beyond prose) needs a new minor or major; a patch changes prose only.
  const added = firstContractDifference(base, current)
  const versionTooLow = added !== undefined && cv[0] === bv[0] && cv[1] === bv[1]
    ? `the document differs from the released ${base.info.version} in more than prose (first at ${added}): an addition raises info.version's minor (${bv[0]}.${bv[1] + 1}.0), docs/reference/compatibility.md`
    : undefined
  const json = argv.includes('--json')
  if (versionTooLow !== undefined) err.write(versionTooLow + '\n')
  if (json) {
    out.write(JSON.stringify({ released: base.info.version, current: current.info.version, newMajor, versionTooLow: versionTooLow ?? null, breaking: unexplained, accepted: accepted.filter(a => !stale.includes(a)), staleExceptions: stale }, null, 2) + '\n')
  } else {
    const line = (c) => `  ${c.id}${c.detail === '' ? '' : ` (${c.detail})`}\n`
    for (const a of accepted.filter(x => !stale.includes(x))) out.write(`accepted: ${a.change}\n  reason: ${a.reason}\n`)
    if (unexplained.length > 0) {
      const head = newMajor
        ? `breaking changes against ${base.info.version}, recorded by the new major version ${current.info.version}:\n`
        : `breaking changes against the released ${base.info.version} (raise info.version's major, or see docs/reference/compatibility.md):\n`
      ;(newMajor ? out : err).write(head + unexplained.map(line).join(''))
    }
    for (const a of stale) err.write(`${exceptionsPath}: the exception "${a.change}" matches no change against ${base.info.version}: remove it\n`)
    if (unexplained.length === 0 && stale.length === 0 && versionTooLow === undefined) out.write(`${current.info.version} is compatible with the released ${base.info.version}\n`)
  }
  return (unexplained.length > 0 && !newMajor) || stale.length > 0 || versionTooLow !== undefined ? 1 : 0
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main()
