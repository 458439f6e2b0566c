/*
 * The generated reference pages, each written from its one source:
 *   docs/reference/configuration.md and .env.example  ← the config schema (src/config/index.ts)
 *   docs/reference/cli.md                             ← the commander program (src/cli/program.ts)
 *   docs/reference/errors.md                          ← the error catalogue (src/errors.ts)
 *   docs/reference/metrics.md                         ← the metrics registry (src/observability/metrics.ts)
 *   docs/reference/http-api.md                        ← the OpenAPI document (openapi/openapi.json)
 * `npm run docs` writes them; `npm run docs:check` and test/docs/reference.test.ts fail on drift.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Argument, Command, Option } from 'commander'
import { buildProgram } from '../src/cli/program.js'
import { systemClock } from '../src/runtime/clock.js'
import { EXIT_MEANINGS } from '../src/cli/exit.js'
import { EnvSchema, RENAMED_SETTINGS } from '../src/config/index.js'
import { ERROR_CODES } from '../src/errors.js'
import { Metrics } from '../src/observability/metrics.js'
import { DETAIL_FIELD_MAX_LENGTH, DETAILS_MAX_ITEMS } from '../src/schemas/common.js'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

const GENERATED = (source: string, command = 'npm run docs'): string =>
  `<!-- Generated from ${source} by \`${command}\`; edit the source, not this file. -->\n`

/** A Markdown table cell: pipes escaped, line breaks folded. */
const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ')

function table (head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map(r => `| ${r.map(cell).join(' | ')} |`)].join('\n')
}

// --- configuration -------------------------------------------------------------------------------

interface EnvProperty { type?: string, default?: unknown, description?: string, enum?: string[], minimum?: number, maximum?: number, minLength?: number, pattern?: string }

const envProperties = (): Array<[string, EnvProperty]> => Object.entries(EnvSchema.properties as Record<string, EnvProperty>)

function allowed (p: EnvProperty): string {
  if (p.enum !== undefined) return p.enum.map(v => `\`${v}\``).join(', ')
  if (p.type === 'integer') {
    if (p.minimum !== undefined && p.maximum !== undefined) return `integer ${p.minimum}–${p.maximum}`
    if (p.minimum !== undefined) return `integer ≥ ${p.minimum}`
    return 'integer'
  }
  if (p.pattern !== undefined) return `\`${p.pattern}\``
  return p.minLength !== undefined && p.minLength > 0 ? 'non-empty text' : 'text'
}

const defaultOf = (p: EnvProperty): string => p.default === undefined ? 'unset' : p.default === '' ? 'empty' : `\`${String(p.default)}\``

function configurationReference (): string {
  return `${GENERATED('the config schema in src/config/index.ts')}
# Configuration

The service and the \`petstore\` command read their settings from environment variables only, once
at start, and refuse to start on a bad value, naming the variable (exit 1). Nothing else reads the
environment. No \`.env\` file is loaded: export the variables, give them to your process manager, or
copy [\`.env.example\`](../../.env.example) (every variable, commented out at its default) and load it
with \`set -a; . ./.env; set +a\`.

${table(['Variable', 'Default', 'Allowed', 'Meaning'], envProperties().map(([name, p]) => [`\`${name}\``, defaultOf(p), allowed(p), p.description ?? '']))}

## Renamed settings

Still read by their old name for one minor version after the rename (the start logs a warning
naming the new one; setting both is refused). See CHANGELOG.md, "Deprecated".

${table(['Old name', 'New name'], Object.entries(RENAMED_SETTINGS).map(([old, now]) => [`\`${old}\``, `\`${now}\``]))}
`
}

/** Wraps a comment to lines of at most `width` characters, each starting with `# `. */
function commentLines (text: string, width = 100): string[] {
  const lines: string[] = []
  let line = '#'
  for (const word of text.split(/\s+/)) {
    if (line.length + 1 + word.length > width && line !== '#') {
      lines.push(line)
      line = '#'
    }
    line += ` ${word}`
  }
  lines.push(line)
  return lines
}

function envExample (): string {
  const out = [
    '# Generated from the config schema in src/config/index.ts by `npm run docs`; edit the source, not this file.',
    '# Every setting of the Petstore service, commented out at its default: copy this file to .env, uncomment',
    '# what you change, and load it with `set -a; . ./.env; set +a` (the service reads the environment only).',
    '# docs/reference/configuration.md has the same list as a table.'
  ]
  for (const [name, p] of envProperties()) {
    out.push('', ...commentLines(`${p.description ?? ''} Allowed: ${allowed(p).replace(/`/g, '')}.`), `# ${name}=${p.default === undefined ? '' : String(p.default)}`)
  }
  return `${out.join('\n')}\n`
}

// --- CLI -----------------------------------------------------------------------------------------

function commandPath (cmd: Command): string {
  const names: string[] = []
  for (let c: Command | null = cmd; c !== null; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

const argumentLabel = (a: Argument): string => `${a.required ? '<' : '['}${a.name()}${a.variadic ? '...' : ''}${a.required ? '>' : ']'}`

function commandSection (cmd: Command): string {
  const visibleOptions = cmd.options.filter((o: Option) => !o.hidden)
  const parts = [`## \`${commandPath(cmd)}\``, '', cmd.description(), '', '```text', `${commandPath(cmd)} ${cmd.usage()}`, '```']
  if (cmd.registeredArguments.length > 0) {
    parts.push('', table(['Argument', 'Meaning'], cmd.registeredArguments.map(a => [`\`${argumentLabel(a)}\``, a.description])))
  }
  if (visibleOptions.length > 0) {
    parts.push('', table(['Option', 'Meaning'], visibleOptions.map(o => [`\`${o.flags}\``, `${o.description}${o.defaultValue === undefined ? '' : ` (default: ${String(o.defaultValue)})`}`])))
  }
  return parts.join('\n')
}

function cliReference (): string {
  const program = buildProgram(systemClock)
  const sections: string[] = []
  const walk = (cmd: Command): void => {
    for (const sub of cmd.commands) {
      if (sub.commands.length === 0) sections.push(commandSection(sub))
      else walk(sub)
    }
  }
  walk(program)
  return `${GENERATED('the commander program in src/cli/program.ts')}
# The \`petstore\` command

${program.description()}

Run it as \`bin/petstore …\` in a clone or install of this repository (the launcher runs the built CLI on the Node \`npm install\` chose; it installs and builds nothing, unlike \`npx petstore\`, which copies the folder into npm's cache and builds it there), as \`petstore …\` in the image, or as \`node dist/cli/index.js …\` from anywhere (on a system Node older than 22.14 it runs on the Node \`npm install\` put in node_modules/.petstore-node: [node-runtime.md](node-runtime.md#outside-npm-on-an-older-system-node)). Results go to stdout,
everything else to stderr; \`petstore COMMAND --help\` prints what follows for one command. A reader
that closes the pipe early (\`petstore keys list | head -1\`) cuts a listing short with exit 0; where
stdout is the product (\`export\`, a new key's secret, \`conformance\`'s result) the command exits 1
(\`keys create\` names the key it stored, to revoke).

${table(['Exit code', 'Meaning'], Object.entries(EXIT_MEANINGS).map(([code, meaning]) => [code, meaning]))}

A usage error is one line naming the mistake (a mistyped option with the nearest known one), then
where the usage is, and exits 2 before anything is tried:

\`\`\`text
petstore: error: unknown option '--nmae' (did you mean --name?)
Run 'petstore keys create --help' for usage.
\`\`\`

\`petstore --help\` lists the commands, one line each. Every command that opens a store writes its
\`petstore: store: …\` line on stderr first (\`copy\` a \`petstore: target: …\` line too), whether
stdout and stderr are a terminal, a pipe or a file (a cron log shows which database a backup
read); \`backup\`, \`export\` and \`import\` end with a summary line there (with \`--json\`, a JSON
summary on stdout instead). A SQLite database is made only where asked: \`backup\`, \`export\` and
\`copy\` refuse a source that is missing or an empty file (exit 1), the \`keys\` commands make one only
with \`--create\`, and \`import\` and \`copy --to\` make one at a new path, but not where a store was lost
(its \`.store-id\` marker or WAL is still there), as a server start does
([durability.md](../explanation/durability.md#at-start)); a load that fails removes the database it made.
Every command that opens a SQLite database refuses one that is not the store its \`.store-id\` marker
names (another database moved or copied over the path; exit 1, the file left untouched), as a server
start does; deleting the marker says the database is meant to be there.

${sections.join('\n\n')}
`
}

// --- errors --------------------------------------------------------------------------------------

function errorsReference (): string {
  return `${GENERATED('the error catalogue in src/errors.ts')}
# Errors

Every error the API answers is a JSON \`Error\` object with the HTTP status repeated in the body:

\`\`\`json
{ "code": "validation_failed", "message": "body field 'name' is required", "status": 400 }
\`\`\`

Branch on \`code\`; \`message\` is for people and may change. A code keeps its status and meaning for
the whole major version, and the set is open: a later 1.x may add codes, which a client handles by the
HTTP status ([compatibility.md](compatibility.md#error-codes)). The codes of this version:

${table(['Code', 'Status', 'When'], Object.entries(ERROR_CODES).map(([code, e]) => [`\`${code}\``, String(e.status), e.description]))}

## Field errors: \`details\`

A \`validation_failed\` answer names every broken rule of the body in \`message\` (joined by \`; \`) and
lists them in \`details\`, one \`{ "field", "message" }\` per field, in the same order. Both stay
within the Error schema, however many fields a body breaks and however long their names:

- \`details\` holds at most ${DETAILS_MAX_ITEMS} entries: the first ${DETAILS_MAX_ITEMS} broken fields. When more broke a
  rule, \`message\` lists the same ${DETAILS_MAX_ITEMS} and ends with how many it left out:
  \`; and N more fields break a rule, not listed\`.
- A field name (a dotted path) longer than ${DETAIL_FIELD_MAX_LENGTH} characters is shown as its first ${DETAIL_FIELD_MAX_LENGTH - 1}
  followed by \`…\`, in \`details[].field\` and wherever a \`message\` quotes it (query, path and
  header names too). Characters are Unicode code points, as JSON Schema's \`maxLength\` counts them.

Which operation answers which code: [the HTTP API reference](http-api.md).
`
}

// --- metrics -------------------------------------------------------------------------------------

interface RegistryMetric { name: string, help: string, labelNames: readonly string[], get: () => Promise<{ type: string }> }

async function metricsOf (postgres: boolean): Promise<Map<string, { type: string, help: string, labels: readonly string[] }>> {
  const store = postgres ? { poolStats: () => ({ total: 0, idle: 0, waiting: 0 }), namedStatements: () => true, onNamingStopped: () => {} } : {}
  const registry = new Metrics(store).registry
  const out = new Map<string, { type: string, help: string, labels: readonly string[] }>()
  for (const m of registry.getMetricsAsArray() as unknown as RegistryMetric[]) {
    out.set(m.name, { type: (await m.get()).type, help: m.help, labels: m.labelNames })
  }
  return out
}

async function metricsReference (): Promise<string> {
  const common = await metricsOf(false)
  const all = await metricsOf(true)
  const rows = [...all].map(([name, m]) => [
    `\`${name}\``, m.type, m.labels.map(l => `\`${l}\``).join(', '), `${common.has(name) ? '' : 'PostgreSQL only. '}${m.help}`
  ])
  return `${GENERATED('the metrics registry in src/observability/metrics.ts')}
# Metrics

With \`METRICS_PORT\` set (e.g. \`9464\`), each instance serves Prometheus metrics at
\`GET /metrics\` on a listener of its own (\`METRICS_HOST\`, loopback by default), never on the API
port. Besides these, the listener exports prom-client's default process metrics (CPU, memory, event
loop lag, garbage collection), each prefixed \`petstore_\`.

**Decision**: a series without a value is left out, never shown as 0, NaN or a sentinel. The
event-loop delay gauges (\`petstore_nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds\`)
report the delays sampled since the previous scrape (every 10 ms); with none sampled (the first
scrape after a start, or two scrapes within 10 ms) they have no series, where prom-client's own
would read a minimum of 9223372036.85 s and a mean of NaN, and 0 would claim a loop without delay.
Alert rules and dashboards read a missing series as "no data".

${table(['Metric', 'Type', 'Labels', 'Meaning'], rows)}
`
}

// --- HTTP API ------------------------------------------------------------------------------------

interface OpenApiResponse { description?: string, $ref?: string }
interface OpenApiOperation { operationId?: string, summary?: string, deprecated?: boolean, responses?: Record<string, OpenApiResponse>, servers?: unknown[] }
interface OpenApiDocument { paths: Record<string, Record<string, OpenApiOperation>>, components?: { responses?: Record<string, OpenApiResponse> }, 'x-unrouted-requests'?: { description?: string, responses?: Record<string, OpenApiResponse> } }

// An error response's description names its codes after the status text; the table has them in a column of their own.
const firstSentence = (text: string): string => (text.split('\n')[0] ?? '').replace(/: an `Error` whose `code` .*$/, '').replace(/\.$/, '')

function httpApiReference (): string {
  const document = JSON.parse(readFileSync(`${ROOT}openapi/openapi.json`, 'utf8')) as OpenApiDocument
  const codes = Object.keys(ERROR_CODES)
  const resolve = (r: OpenApiResponse): OpenApiResponse => r.$ref === undefined ? r : document.components?.responses?.[r.$ref.split('/').pop()!] ?? r
  const statusTable = (responses: Record<string, OpenApiResponse>): string => table(['Status', 'Meaning', 'Error codes'], Object.entries(responses).map(([status, r]) => {
    const description = resolve(r).description ?? ''
    return [status, firstSentence(description), codes.filter(c => description.includes(`\`${c}\``)).map(c => `\`${c}\``).join(', ')]
  }))
  const sections: string[] = []
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op.responses === undefined) continue
      const url = op.servers === undefined ? `/v1${path}` : path
      sections.push([
        `## \`${method.toUpperCase()} ${url}\` — ${op.operationId ?? ''}${op.deprecated === true ? ' (deprecated)' : ''}`,
        '', `${op.summary ?? ''}.`, '', statusTable(op.responses)
      ].join('\n'))
    }
  }
  const unrouted = document['x-unrouted-requests']
  if (unrouted?.responses !== undefined) {
    sections.push(['## Any other request', '', unrouted.description ?? '', '', statusTable(unrouted.responses)].join('\n'))
  }
  return `${GENERATED('openapi/openapi.json (itself generated from the routes)')}
# HTTP API

Every operation, the statuses it can answer and, for errors, the \`code\` values each status can carry.
The OpenAPI document is the full contract (schemas, headers, examples): \`GET /openapi.json\` on a
running server, [openapi/openapi.json](../../openapi/openapi.json) in the repository, and the
\`/docs\` page. Operations under \`/v1\` need \`Authorization: Bearer <API_KEY>\`; the health checks do
not. The codes are explained in [errors.md](errors.md).

## Rules every request follows

- Every operation under \`/v1\` needs \`Authorization: Bearer <API_KEY>\`
  (\`bin/petstore keys create --name NAME\`); without a valid key the answer is 401 before anything
  else is looked at.
- Every error is an \`Error\` object (\`code\`, \`message\`, \`status\`); branch on \`code\`. A body that
  breaks several rules gets one 400 \`validation_failed\`: \`message\` names each, and \`details\` lists them
  by field (\`field\`, \`message\`), at most ${DETAILS_MAX_ITEMS}, the rest counted at the end of \`message\`
  ([errors.md](errors.md#field-errors-details)); \`details\` is additive.
- Every response carries \`X-Request-Id\`: the client's own when it is 1–128 characters of
  \`A-Za-z0-9._:-\`, else a new UUID; the server's log line for the request carries it too.
- A path under \`/v1\` that is not listed answers 404 \`not_found\`; a listed path with another method
  answers 405 \`method_not_allowed\` with \`Allow\`, for every method and before any body is read
  (the document's \`x-unrouted-requests\`, and the last section below).
- A request the HTTP parser refuses never reaches an operation: it is answered with an Error and
  the connection closed — 400 \`bad_request\` for a malformed request line, header or framing, an
  HTTP/1.1 request without \`Host\`, or \`Host\`, \`Authorization\` or \`Content-Type\` sent twice;
  408 \`request_timeout\`; 431 \`header_too_large\`.
- An \`Expect\` other than \`100-continue\` is 417 \`expectation_failed\`; \`100 Continue\` is sent only
  after authentication, routing and the size check.
- \`id\` and \`categoryId\` are int64: parse them without rounding (the typed client gives them as
  \`bigint\`).

${sections.join('\n\n')}
`
}

/** Every generated file, by path relative to the project folder. */
export async function renderReferences (): Promise<Record<string, string>> {
  return {
    'docs/reference/configuration.md': configurationReference(),
    '.env.example': envExample(),
    'docs/reference/cli.md': cliReference(),
    'docs/reference/errors.md': errorsReference(),
    'docs/reference/metrics.md': await metricsReference(),
    'docs/reference/http-api.md': httpApiReference()
  }
}

/** The paths whose committed text differs from `files` (or that are missing). */
export function staleReferences (files: Record<string, string>): string[] {
  return Object.entries(files).filter(([path, text]) => {
    try {
      return readFileSync(`${ROOT}${path}`, 'utf8') !== text
    } catch {
      return true
    }
  }).map(([path]) => path)
}
