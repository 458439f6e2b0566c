import { existsSync } from 'node:fs'
import { isIP } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Type, type Static } from 'typebox'
import { checkEnv } from './env-check.js'

/**
 * The project directory: the nearest folder above this module with a package.json (src/, dist/ and
 * dist/chunks/ all lead there). Not module.findPackageJSON: on Node 20 that import fails before the
 * entry can say which Node it needs (test/blackbox/old-node.test.ts).
 */
export const PROJECT_ROOT = projectRoot(dirname(fileURLToPath(import.meta.url)))

function projectRoot (from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) return resolve(from, '..')
  }
}
const DEFAULT_DATABASE_URL = 'sqlite:data/petstore.db'
/** The largest BODY_LIMIT a deployment may set (petstore conformance sends one byte more to see 413). */
export const LARGEST_BODY_LIMIT = 1048576

/** Every setting, read once here (nothing else reads process.env); the reference docs and .env.example are generated from it. */
export const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'TCP port to listen on; change it when 8080 is taken or the platform assigns one.' }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Address to listen on; 0.0.0.0 to be reached from other hosts or from outside a container.' }),
  DATABASE_URL: Type.String({ minLength: 1, default: DEFAULT_DATABASE_URL, description: 'sqlite:PATH (a relative PATH is relative to the working directory), sqlite::memory:, postgres://… or postgresql://… (PostgreSQL: docs/how-to/postgresql.md). Unset: data/petstore.db in the project directory, wherever the command runs from.' }),
  // Plain enums (not unions of literals) so a bad value gets one message naming the variable.
  LOG_LEVEL: Type.Unsafe<string>({ type: 'string', enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info', description: 'Least severe level logged: warn for no per-request access lines, debug to diagnose.' }),
  BODY_LIMIT: Type.Integer({ minimum: 256, maximum: LARGEST_BODY_LIMIT, default: 16384, description: 'Largest accepted request body, in bytes; larger → 413.' }),
  KEY_CACHE_TTL_MS: Type.Integer({ minimum: 0, maximum: 1000, default: 500, description: 'How long a verified API key is trusted before the store is asked again; bounds how late a revocation takes effect.' }),
  PG_POOL_MAX: Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'PostgreSQL: most connections this instance opens (its pool size); lower it to fit many instances under the server\'s max_connections.' }),
  PG_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600000, default: 5000, description: 'PostgreSQL: longest a statement may run (writes: the server statement_timeout, except a batch of creates without Idempotency-Keys, whose wait for the insert lock the server lock_timeout bounds; every statement: the client gives up 1 s after) before the request answers 503.' }),
  PG_CONNECT_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60000, default: 2000, description: 'PostgreSQL: longest wait for a connection (a new one, or a free one from the pool) before the request answers 503.' }),
  PG_PREPARED_STATEMENTS: Type.Unsafe<string>({ type: 'string', enum: ['auto', 'on', 'off'], default: 'auto', description: 'PostgreSQL: auto (the default) sends the primary-key reads and the pet insert as named (server-side prepared) statements, for less database CPU, until the server shows a transaction-mode pooler in between, then stops (logged once at warn; petstore_pg_named_statements 0); off never names one (behind such a pooler: no probe, no warning); on names statements inside transactions too (direct connections, or a pooler that tracks them such as PgBouncer >= 1.21 with max_prepared_statements).' }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 30000, description: 'Longest time to receive a whole request; lower it to drop slow senders sooner.' }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 72000, description: 'How long an idle keep-alive connection is kept; keep it above the load balancer\'s idle timeout, so the balancer never reuses a connection this server closed.' }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 10000, description: 'On SIGTERM/SIGINT, how long in-flight requests may take before the process exits anyway.' }),
  SHUTDOWN_DRAIN_MS: Type.Integer({ minimum: 0, maximum: 600000, default: 5000, description: 'On SIGTERM, how long the instance keeps serving with /readyz answering 503 (so load balancers take it out of rotation) before it stops accepting connections; 0: stop at once. SIGINT does not wait.' }),
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1000, default: 10000, description: 'Longest time to receive the request headers (slow-header clients are cut with 408).' }),
  RATE_LIMIT_MAX: Type.Integer({ minimum: 0, default: 6000, description: 'Requests per API key per window; 0 turns the per-key limit off.' }),
  RATE_LIMIT_WINDOW_MS: Type.Integer({ minimum: 1000, maximum: 86400000, default: 60000, description: 'Length of the rate-limit window.' }),
  RATE_LIMIT_ANON_MAX: Type.Integer({ minimum: 0, default: 60, description: 'Requests without a valid key per client address per window; past it the address is answered 429 before any key check. 0 turns it off.' }),
  REDIS_URL: Type.String({ default: '', description: 'redis:// URL: rate-limit counters shared by every instance. Empty: counters local to each process.' }),
  TRUST_PROXY: Type.String({ default: '', description: 'Comma-separated proxy addresses/CIDRs whose X-Forwarded-For is trusted for the client address. Empty: the TCP peer is the client.' }),
  EVENT_LOOP_MAX_DELAY_MS: Type.Integer({ minimum: 0, default: 1000, description: 'Event-loop delay past which requests are shed with 503; 0 turns it off.' }),
  METRICS_PORT: Type.String({ pattern: '^(off|[0-9]{1,5})$', default: 'off', description: 'Port of the separate Prometheus /metrics listener (e.g. 9464); off: no listener. Off by default so several instances can share a host.' }),
  METRICS_HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Address of the /metrics listener.' }),
  CORS_ORIGINS: Type.String({ default: '', description: 'Comma-separated browser origins allowed by CORS (e.g. https://app.example.com); empty: CORS off.' }),
  READ_CACHE_MAX_MB: Type.Integer({ minimum: 0, maximum: 65536, default: 64, description: 'Memory for the read cache of getPet and full listPets pages (serialized bodies, ETags), in MiB; least recently used entries go first. 0 turns it off.' }),
  IDEMPOTENCY_TTL_HOURS: Type.Integer({ minimum: 24, maximum: 720, default: 24, description: 'How long an Idempotency-Key is remembered; longer lets clients retry later, for a larger idempotency table.' }),
  LOG_FORMAT: Type.Unsafe<string>({ type: 'string', enum: ['auto', 'json', 'pretty'], default: 'auto', description: 'auto: pretty, coloured lines when stdout is a terminal, JSON lines otherwise; json or pretty: always that.' }),
  NO_COLOR: Type.Optional(Type.String({ description: 'Any non-empty value turns colours off (no-color.org): pretty logs and CLI tables stay plain.' })),
  PETSTORE_CLI: Type.Optional(Type.String({ minLength: 1, description: 'How an operator runs the petstore CLI on this store, as the start-up messages name it (the first key\'s "Make more with: … keys create --name NAME"). Default: the launcher `bin/petstore` of this install (its full path when the server runs from another directory). The image sets `docker exec <container> petstore`; the compose files, the Kubernetes deployment and the systemd unit set their own form.' })),
  FIRST_KEY_FILE: Type.Optional(Type.String({ minLength: 1, description: 'Where the first-start API key is written (mode 0600) when stderr is not a terminal. Default: first-api-key.txt beside the SQLite database, or data/first-api-key.txt in the project directory for PostgreSQL.' })),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ description: 'Production base address, ending in /v1: a server of the OpenAPI document, after this server (relative /v1). Default: not listed.' })),
  STAGING_BASE_URL: Type.Optional(Type.String({ description: 'Staging base address, ending in /v1: a server of the OpenAPI document, after production. Default: not listed.' })),
  // OpenTelemetry's standard variables. These decide whether tracing is on and are checked here; the
  // SDK reads them, and every other OTEL_* variable (headers, sampler, batch, resource), itself
  // (docs/how-to/observe.md, "Traces").
  OTEL_EXPORTER_OTLP_ENDPOINT: Type.Optional(Type.String({ minLength: 1, description: 'OTLP/HTTP base address, e.g. http://otel-collector:4318: set, spans are exported to its /v1/traces (tracing on). Unset (and no OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER=otlp): no tracing, and nothing of the OpenTelemetry SDK is loaded.' })),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({ minLength: 1, description: 'Full OTLP/HTTP address for spans (e.g. http://otel-collector:4318/v1/traces); set, tracing is on.' })),
  OTEL_TRACES_EXPORTER: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['otlp', 'none'], description: 'otlp: tracing on (to http://localhost:4318 unless an endpoint is set); none: off whatever else is set.' })),
  OTEL_EXPORTER_OTLP_PROTOCOL: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['http/protobuf', 'http/json'], description: 'Encoding of exported spans (default http/protobuf); gRPC is not supported. OTEL_EXPORTER_OTLP_TRACES_PROTOCOL takes precedence.' })),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['http/protobuf', 'http/json'], description: 'Encoding of exported spans, for traces only.' })),
  OTEL_SDK_DISABLED: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['true', 'false'], description: 'true: no tracing, whatever else is set.' })),
  OTEL_RESOURCE_ATTRIBUTES: Type.Optional(Type.String({ description: 'Resource attributes of the exported spans, key=value,… (e.g. deployment.environment.name=prod,service.namespace=shop).' })),
  OTEL_SERVICE_NAME: Type.Optional(Type.String({ minLength: 1, description: 'service.name of the exported spans. Default: petstore (unless OTEL_RESOURCE_ATTRIBUTES names one).' })),
  OTEL_PROPAGATORS: Type.Optional(Type.String({ description: 'Trace context read from requests, comma-separated: tracecontext (W3C traceparent/tracestate), baggage (W3C baggage), none. Default: tracecontext,baggage.' }))
})
type Env = Static<typeof EnvSchema>

export type DatabaseLocation =
  | { kind: 'sqlite', path: string } // path is absolute, or ':memory:'
  | { kind: 'postgres', url: string }

/** The configuration: what loadConfig returns, each field documented where it is read. */
export type Config = ReturnType<typeof loadConfig>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

export function parseDatabaseUrl (value: string, cwd: string): DatabaseLocation {
  if (value === 'sqlite::memory:') return { kind: 'sqlite', path: ':memory:' }
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length)
    if (path === '') throw new ConfigError('DATABASE_URL: sqlite: needs a file path, e.g. sqlite:data/petstore.db')
    return { kind: 'sqlite', path: resolve(cwd, path) }
  }
  if (/^postgres(ql)?:\/\//.test(value)) {
    const url = URL.parse(value)
    if (url === null) throw new ConfigError('DATABASE_URL: not a valid postgres:// URL')
    try {
      // Every line that names the store decodes them (store/location.ts).
      decodeURIComponent(url.username + url.pathname)
    } catch {
      throw new ConfigError('DATABASE_URL: the user or database name has a malformed %-escape (write a % itself as %25)')
    }
    return { kind: 'postgres', url: value }
  }
  throw new ConfigError('DATABASE_URL: must start with sqlite: or postgres:// (got an unsupported scheme)')
}

function parseRedisUrl (value: string): string | undefined {
  if (value === '') return undefined
  const url = URL.parse(value)
  if (url === null) throw new ConfigError('REDIS_URL: not a valid URL; expected redis://[user:password@]host:port[/db]')
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new ConfigError('REDIS_URL: must start with redis:// or rediss://')
  return value
}

function parseList (value: string): string[] {
  return value.split(',').map(s => s.trim()).filter(s => s !== '')
}

function parseTrustProxy (value: string): string[] | false {
  const items = parseList(value)
  if (items.length === 0) return false
  for (const item of items) {
    const [addr = '', bits, extra] = item.split('/')
    // A prefix as Fastify's proxy-addr takes it: 1 to 32 bits for IPv4, 1 to 128 for IPv6.
    const prefixOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) >= 1 && Number(bits) <= (isIP(addr) === 4 ? 32 : 128))
    const ok = (isIP(addr) !== 0 || ['loopback', 'linklocal', 'uniquelocal'].includes(item)) && extra === undefined && prefixOk
    if (!ok) throw new ConfigError(`TRUST_PROXY: '${item}' is not an IP address, CIDR (prefix 1-32 bits for IPv4, 1-128 for IPv6), or one of loopback, linklocal, uniquelocal`)
  }
  return items
}

function parseCorsOrigins (value: string): string[] {
  const items = parseList(value)
  for (const item of items) {
    const u = URL.parse(item)
    if (u === null || (u.protocol !== 'https:' && u.protocol !== 'http:') || u.origin !== item) throw new ConfigError(`CORS_ORIGINS: '${item}' is not an origin such as https://app.example.com (scheme, host, optional port; no path or trailing slash)`)
  }
  return items
}

function parseMetrics (port: string, host: string): { port: number, host: string } | undefined {
  if (port === 'off') return undefined
  const n = Number(port)
  if (n > 65535) throw new ConfigError('METRICS_PORT: must be a port from 0 to 65535, or off')
  return { port: n, host }
}

function parseBaseUrl (name: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined
  const url = URL.parse(value)
  if (url === null || !/^https?:$/.test(url.protocol) || !url.pathname.endsWith('/v1') || url.search !== '' || url.hash !== '') {
    throw new ConfigError(`${name}: must be an absolute http(s) URL ending in /v1 (no trailing slash, query or fragment), such as https://api.example.org/v1`)
  }
  return `${url.origin}${url.pathname}`
}

function firstKeyFile (value: string | undefined, db: DatabaseLocation, cwd: string): string {
  if (value !== undefined) return resolve(cwd, value)
  if (db.kind === 'sqlite' && db.path !== ':memory:') return join(dirname(db.path), 'first-api-key.txt')
  return join(PROJECT_ROOT, 'data', 'first-api-key.txt')
}

/**
 * Settings renamed in 1.x, old name → new name: the old name is still read, for one minor version
 * after the rename (CHANGELOG.md, "Deprecated"), and the start logs which to change.
 */
export const RENAMED_SETTINGS: Readonly<Record<string, string>> = { SHUTDOWN_DELAY_MS: 'SHUTDOWN_DRAIN_MS' }

/** Reads and validates the configuration; throws ConfigError naming the variable at fault. */
export function loadConfig (given: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()) {
  // An old name set is read as its new one (the schema knows only the new names).
  const renamedSettings = Object.entries(RENAMED_SETTINGS).filter(([old]) => given[old] !== undefined)
  const env = { ...given }
  for (const [old, now] of renamedSettings) {
    if (env[now] !== undefined) throw new ConfigError(`${old}: renamed ${now}, which is set too; set only ${now}`)
    env[now] = env[old]
  }
  const { values, errors } = checkEnv(EnvSchema, env)
  if (errors.length > 0) {
    // A bad value given under an old name is named as the user wrote it.
    const named = errors.map(e => renamedSettings.reduce((m, [old, now]) => m.startsWith(`${now}:`) ? `${now} (set as ${old})${m.slice(now.length)}` : m, e))
    throw new ConfigError(named.join(', '))
  }
  const e = values as Env
  if (e.HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) throw new ConfigError(`HEADERS_TIMEOUT_MS: must not exceed REQUEST_TIMEOUT_MS (${e.REQUEST_TIMEOUT_MS})`)
  // Unset: the project's own database, from any directory; a relative path given: the working directory's.
  const database = parseDatabaseUrl(e.DATABASE_URL, env.DATABASE_URL === undefined ? PROJECT_ROOT : cwd)
  return Object.freeze({
    host: e.HOST,
    port: e.PORT,
    database,
    /** DATABASE_URL was unset: the database is the project's own data/petstore.db. */
    databaseIsDefault: env.DATABASE_URL === undefined,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT as 'auto' | 'json' | 'pretty',
    /** Absolute path of the first-start key file (used when stderr is not a terminal). */
    firstKeyFile: firstKeyFile(e.FIRST_KEY_FILE, database, cwd),
    /** The command the start-up messages give for the CLI (PETSTORE_CLI): this install's `bin/petstore`, or the form its deployment sets. */
    cli: e.PETSTORE_CLI ?? (resolve(cwd) === PROJECT_ROOT ? 'bin/petstore' : join(PROJECT_ROOT, 'bin', 'petstore')),
    /** Colours welcome: NO_COLOR unset or empty. */
    color: e.NO_COLOR === undefined || e.NO_COLOR === '',
    bodyLimit: e.BODY_LIMIT,
    keyCacheTtlMs: e.KEY_CACHE_TTL_MS,
    pgPoolMax: e.PG_POOL_MAX,
    pgStatementTimeoutMs: e.PG_STATEMENT_TIMEOUT_MS,
    pgConnectTimeoutMs: e.PG_CONNECT_TIMEOUT_MS,
    pgPreparedStatements: e.PG_PREPARED_STATEMENTS as 'auto' | 'on' | 'off',
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    /** SIGTERM: readiness 503 for this long, still serving, before closing (rolling restart). */
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    /** Old names the environment used, each with the name it now has (logged at start). */
    renamedSettings,
    /**
     * Started by npm (`npm start`, `npm run dev`, `npx petstore serve`: npm sets npm_lifecycle_event):
     * the end of the process that launched it stops the server as SIGTERM does (src/runtime/stop-signals.ts).
     */
    stopWithLauncher: env.npm_lifecycle_event !== undefined,
    headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
    rateLimit: Object.freeze({ max: e.RATE_LIMIT_MAX, anonMax: e.RATE_LIMIT_ANON_MAX, windowMs: e.RATE_LIMIT_WINDOW_MS }),
    redisUrl: parseRedisUrl(e.REDIS_URL),
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    eventLoopMaxDelayMs: e.EVENT_LOOP_MAX_DELAY_MS,
    /** undefined: no metrics listener. */
    metrics: parseMetrics(e.METRICS_PORT, e.METRICS_HOST),
    corsOrigins: parseCorsOrigins(e.CORS_ORIGINS),
    idempotencyTtlMs: e.IDEMPOTENCY_TTL_HOURS * 3600000,
    readCacheMaxBytes: e.READ_CACHE_MAX_MB * 1048576,
    /** Base addresses (each ending in /v1, no trailing slash) listed as the document's servers; undefined when unset. */
    publicBaseUrl: parseBaseUrl('PUBLIC_BASE_URL', e.PUBLIC_BASE_URL),
    stagingBaseUrl: parseBaseUrl('STAGING_BASE_URL', e.STAGING_BASE_URL),
    /** OpenTelemetry tracing (tracing.ts); undefined: off, and the SDK never loaded. */
    tracing: parseTracing(e)
  })
}

/**
 * Tracing is on as OpenTelemetry's specification has it for an OTLP exporter: an endpoint set, or
 * OTEL_TRACES_EXPORTER=otlp; OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn it off. The
 * service name defaults to petstore, unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name one.
 */
function parseTracing (e: Env) {
  if (e.OTEL_SDK_DISABLED === 'true' || e.OTEL_TRACES_EXPORTER === 'none') return undefined
  const on = e.OTEL_TRACES_EXPORTER === 'otlp' || e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined
  if (!on) return undefined
  const named = /(^|,)\s*service\.name\s*=/.test(e.OTEL_RESOURCE_ATTRIBUTES ?? '')
  return Object.freeze({
    /** undefined: OTEL_RESOURCE_ATTRIBUTES names it. */
    serviceName: e.OTEL_SERVICE_NAME ?? (named ? undefined : 'petstore'),
    /** The encoding of exported spans: the one exporter loaded. */
    protocol: (e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf') as 'http/protobuf' | 'http/json',
    /** The W3C propagators, in order; empty: none (every request starts a trace). */
    propagators: parsePropagators(e.OTEL_PROPAGATORS)
  })
}

/** OTEL_PROPAGATORS as the specification reads it (empty is the default; none wins); only the W3C ones. */
function parsePropagators (value: string | undefined): ReadonlyArray<'tracecontext' | 'baggage'> {
  const names = parseList(value ?? '')
  if (names.length === 0) return Object.freeze(['tracecontext', 'baggage'] as const)
  for (const n of names) {
    if (n !== 'tracecontext' && n !== 'baggage' && n !== 'none') throw new ConfigError(`OTEL_PROPAGATORS: ${JSON.stringify(n)} is not supported (tracecontext, baggage or none)`)
  }
  if (names.includes('none')) return Object.freeze([])
  return Object.freeze([...new Set(names as Array<'tracecontext' | 'baggage'>)])
}
