/**
 * Reads environment variables against the configuration's JSON Schema (src/config/index.ts): each
 * variable a string or an integer, with the keywords that schema uses (minimum, maximum,
 * minLength, pattern, enum) and defaults. Every failure is "NAME: what is wrong", all of them joined.
 *
 * Hand-written instead of env-schema or an Ajv compile, on purpose: env-schema builds an Ajv and
 * compiles draft-07's meta-schema and its own options schema at import, then the configuration
 * schema at every start, a large share of a start's CPU; even the request Ajv already in the bundle
 * would cost its load and a compile before the first request. The schema is ours and flat, so the
 * check is a loop over its properties; a keyword this file does not know makes it throw rather
 * than skip a check.
 *
 * Decisions that differ from env-schema's (docs/explanation/spec-decisions.md): only `env` is read (env-schema also
 * merged process.env under the object it was given); an integer is written in decimal digits with
 * an optional sign (Ajv's type coercion also took `0x10`, `1e3` or ` 80`).
 */

interface PropertySchema { type?: unknown, default?: unknown, [keyword: string]: unknown }
export interface ObjectSchema { properties: Record<string, object>, required?: readonly string[] }

const ANNOTATIONS = new Set(['description', 'default', 'type'])
const INTEGER = /^[-+]?[0-9]+$/

export function checkEnv (schema: ObjectSchema, env: NodeJS.ProcessEnv): { values: Record<string, string | number | undefined>, errors: string[] } {
  const values: Record<string, string | number | undefined> = {}
  const errors: string[] = []
  const required = new Set(schema.required ?? [])
  for (const [name, property] of Object.entries(schema.properties)) {
    const s = property as PropertySchema
    const raw = env[name] ?? (s.default === undefined ? undefined : String(s.default))
    if (raw === undefined) {
      if (required.has(name)) errors.push(`${name}: must be set`)
      values[name] = undefined
      continue
    }
    const problem = check(name, s, raw)
    if (problem !== undefined) errors.push(`${name}: ${problem}`)
    values[name] = s.type === 'integer' ? Number(raw) : raw
  }
  return { values, errors }
}

/** What is wrong with one value (in Ajv's words), or undefined. */
function check (name: string, s: PropertySchema, raw: string): string | undefined {
  let n = NaN
  if (s.type === 'integer') {
    n = Number(raw)
    if (!INTEGER.test(raw) || !Number.isSafeInteger(n)) return 'must be integer'
  } else if (s.type !== 'string') {
    throw new Error(`config schema: ${name} has type ${String(s.type)}; src/config/env-check.ts reads strings and integers only`)
  }
  for (const [keyword, v] of Object.entries(s)) {
    if (ANNOTATIONS.has(keyword)) continue
    switch (keyword) {
      case 'minimum': if (n < (v as number)) return `must be >= ${String(v)}`; break
      case 'maximum': if (n > (v as number)) return `must be <= ${String(v)}`; break
      // In code points, as JSON Schema (and Ajv) count.
      case 'minLength': if ([...raw].length < (v as number)) return `must NOT have fewer than ${String(v)} characters`; break
      case 'pattern': if (!new RegExp(v as string, 'u').test(raw)) return `must match pattern "${String(v)}"`; break
      case 'enum': if (!(v as unknown[]).includes(raw)) return `must be one of ${(v as unknown[]).join(', ')} (got '${raw}')`; break
      default: throw new Error(`config schema: ${name} uses ${keyword}, which src/config/env-check.ts does not check`)
    }
  }
  return undefined
}
