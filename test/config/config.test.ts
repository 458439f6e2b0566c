import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import Fastify from 'fastify'
import { ConfigError, loadConfig, PROJECT_ROOT } from '../../src/config/index.js'
import { onCleanup } from '../helpers/cleanup.js'

describe('loadConfig', () => {
  it('applies the documented defaults, resolving the default database path against the project directory', () => {
    const c = loadConfig({}, '/srv/elsewhere')
    assert.equal(c.port, 8080)
    assert.equal(c.host, '127.0.0.1')
    assert.deepEqual(c.database, { kind: 'sqlite', path: join(PROJECT_ROOT, 'data', 'petstore.db') })
    assert.equal(c.databaseIsDefault, true)
    assert.equal(loadConfig({ DATABASE_URL: 'sqlite:data/petstore.db' }, '/srv/elsewhere').databaseIsDefault, false)
    assert.equal(c.logLevel, 'info')
    assert.equal(c.bodyLimit, 16384)
    assert.equal(c.keyCacheTtlMs, 500)
    assert.ok(Object.isFrozen(c))
  })

  it('reads every variable it documents', () => {
    const c = loadConfig({ PORT: '0', HOST: '0.0.0.0', DATABASE_URL: 'sqlite:/var/lib/p.db', LOG_LEVEL: 'debug', BODY_LIMIT: '1024', KEY_CACHE_TTL_MS: '0' }, '/x')
    assert.deepEqual([c.port, c.host, c.database, c.logLevel, c.bodyLimit, c.keyCacheTtlMs],
      [0, '0.0.0.0', { kind: 'sqlite', path: '/var/lib/p.db' }, 'debug', 1024, 0])
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite::memory:' }, '/x').database, { kind: 'sqlite', path: ':memory:' })
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:rel/p.db' }, '/x').database, { kind: 'sqlite', path: '/x/rel/p.db' })
  })

  it('reads a renamed setting by its old name, says so, and refuses both names at once', () => {
    const old = loadConfig({ SHUTDOWN_DELAY_MS: '2500' }, '/x')
    assert.equal(old.shutdownDrainMs, 2500)
    assert.deepEqual(old.renamedSettings, [['SHUTDOWN_DELAY_MS', 'SHUTDOWN_DRAIN_MS']])
    const now = loadConfig({ SHUTDOWN_DRAIN_MS: '2500' }, '/x')
    assert.equal(now.shutdownDrainMs, 2500)
    assert.deepEqual(now.renamedSettings, [])
    assert.equal(loadConfig({}, '/x').shutdownDrainMs, 5000)
    assert.throws(() => loadConfig({ SHUTDOWN_DELAY_MS: 'x' }, '/x'), (e: unknown) => e instanceof ConfigError && /^SHUTDOWN_DRAIN_MS \(set as SHUTDOWN_DELAY_MS\): /.test(e.message))
    assert.throws(() => loadConfig({ SHUTDOWN_DELAY_MS: '1', SHUTDOWN_DRAIN_MS: '1' }, '/x'), (e: unknown) => e instanceof ConfigError && /SHUTDOWN_DELAY_MS: renamed SHUTDOWN_DRAIN_MS/.test(e.message))
  })

  it('throws a ConfigError naming the variable for every bad value', async (t) => {
    const bad: Array<[string, string]> = [
      ['PORT', 'abc'], ['PORT', ''], ['PORT', '1.5'], ['PORT', '70000'], ['PORT', '-1'], ['PORT', '80 80'],
      ['DATABASE_URL', 'mysql://localhost/db'], ['DATABASE_URL', 'sqlite:'], ['DATABASE_URL', 'data/petstore.db'], ['DATABASE_URL', ''],
      ['LOG_LEVEL', 'loud'], ['LOG_LEVEL', 'INFO'], ['LOG_LEVEL', ''],
      ['BODY_LIMIT', '10'], ['BODY_LIMIT', 'big'],
      ['KEY_CACHE_TTL_MS', '5000'], ['KEY_CACHE_TTL_MS', '-1'],
      ['REQUEST_TIMEOUT_MS', '5'], ['KEEP_ALIVE_TIMEOUT_MS', 'x'], ['SHUTDOWN_TIMEOUT_MS', '1']
    ]
    for (const [name, value] of bad) {
      await t.test(`${name}=${JSON.stringify(value)}`, () => {
        assert.throws(() => loadConfig({ [name]: value }, '/x'), (err: Error) => {
          assert.ok(err instanceof ConfigError, String(err))
          assert.match(err.message, new RegExp(`^${name}: \\S`))
          assert.equal(err.message.includes('\n'), false)
          return true
        })
      })
    }
  })
})

describe('reading the environment', () => {
  it('takes integers in decimal digits only, and says what is wrong in one message per variable', () => {
    for (const value of ['0x10', '1e3', ' 80', '80 ', '8_080', '9007199254740993']) {
      assert.throws(() => loadConfig({ PORT: value }, '/x'), { name: 'ConfigError', message: 'PORT: must be integer' })
    }
    assert.equal(loadConfig({ PORT: '+80' }, '/x').port, 80)
    assert.throws(() => loadConfig({ PORT: '70000', HOST: '', METRICS_PORT: 'on', LOG_LEVEL: 'loud' }, '/x'), {
      name: 'ConfigError',
      message: 'PORT: must be <= 65535, HOST: must NOT have fewer than 1 characters, LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got \'loud\'), METRICS_PORT: must match pattern "^(off|[0-9]{1,5})$"'
    })
    assert.throws(() => loadConfig({ BODY_LIMIT: '10' }, '/x'), { message: 'BODY_LIMIT: must be >= 256' })
  })

  it('reads only the variables it is given, not process.env besides them', (t) => {
    const before = process.env.PORT
    onCleanup(t, () => { if (before === undefined) delete process.env.PORT; else process.env.PORT = before })
    process.env.PORT = '9999'
    assert.equal(loadConfig({}, '/x').port, 8080)
    assert.equal(loadConfig(undefined, '/x').port, 9999)
  })
})

describe('operations settings', () => {
  it('reads the limits, Redis, metrics, CORS, proxy and idempotency settings', () => {
    const c = loadConfig({
      RATE_LIMIT_MAX: '10',
      RATE_LIMIT_ANON_MAX: '3',
      RATE_LIMIT_WINDOW_MS: '2000',
      REDIS_URL: 'redis://127.0.0.1:6390/1',
      METRICS_PORT: '9999',
      METRICS_HOST: '0.0.0.0',
      CORS_ORIGINS: 'https://a.example, http://localhost:3000',
      TRUST_PROXY: '10.0.0.0/8,loopback',
      EVENT_LOOP_MAX_DELAY_MS: '250',
      IDEMPOTENCY_TTL_HOURS: '48',
      HEADERS_TIMEOUT_MS: '5000'
    }, '/x')
    assert.deepEqual(c.rateLimit, { max: 10, anonMax: 3, windowMs: 2000 })
    assert.equal(c.redisUrl, 'redis://127.0.0.1:6390/1')
    assert.deepEqual(c.metrics, { port: 9999, host: '0.0.0.0' })
    assert.deepEqual(c.corsOrigins, ['https://a.example', 'http://localhost:3000'])
    assert.deepEqual(c.trustProxy, ['10.0.0.0/8', 'loopback'])
    assert.equal(c.eventLoopMaxDelayMs, 250)
    assert.equal(c.idempotencyTtlMs, 48 * 3600000)
    assert.equal(c.headersTimeoutMs, 5000)
    const d = loadConfig({}, '/x')
    assert.deepEqual([d.redisUrl, d.corsOrigins, d.trustProxy, d.metrics], [undefined, [], false, undefined])
    assert.deepEqual(loadConfig({ METRICS_PORT: '0' }, '/x').metrics, { port: 0, host: '127.0.0.1' })
  })

  it('throws a ConfigError naming the variable for every bad value', async (t) => {
    const bad: Array<[string, string]> = [
      ['RATE_LIMIT_MAX', '-1'], ['RATE_LIMIT_MAX', 'many'], ['RATE_LIMIT_ANON_MAX', '1.5'], ['RATE_LIMIT_WINDOW_MS', '10'],
      ['REDIS_URL', 'localhost:6379'], ['REDIS_URL', 'http://x'], ['METRICS_PORT', '70000'], ['METRICS_PORT', 'on'],
      ['METRICS_HOST', ''], ['CORS_ORIGINS', 'https://a.example/'], ['CORS_ORIGINS', '*'], ['CORS_ORIGINS', 'a.example'],
      ['TRUST_PROXY', 'everyone'], ['TRUST_PROXY', '10.0.0.0/8/1'], ['EVENT_LOOP_MAX_DELAY_MS', '-5'],
      // Prefixes Fastify's proxy-addr refuses at start, with a line that does not name the variable.
      ['TRUST_PROXY', '10.0.0.0/33'], ['TRUST_PROXY', '::1/129'], ['TRUST_PROXY', '10.0.0.0/0'],
      ['IDEMPOTENCY_TTL_HOURS', '1'], ['HEADERS_TIMEOUT_MS', '10'], ['HEADERS_TIMEOUT_MS', '60000']
    ]
    for (const [name, value] of bad) {
      await t.test(`${name}=${JSON.stringify(value)}`, () => {
        assert.throws(() => loadConfig({ [name]: value }, '/x'), (err: Error) => {
          assert.ok(err instanceof ConfigError, String(err))
          assert.match(err.message, new RegExp(`^${name}: \\S`))
          return true
        })
      })
    }
  })
})

describe('TRUST_PROXY', () => {
  it('accepts what Fastify accepts at start, and refuses the rest itself, naming the variable', () => {
    const values = ['10.0.0.0/32', '10.0.0.0/1', '::1/128', '::ffff:10.0.0.1/128', 'fe80::/10', 'loopback,192.168.0.1',
      '10.0.0.0/33', '::1/129', '10.0.0.0/0', '::/0', '10.0.0.0/1000']
    for (const value of values) {
      let trustProxy: string[] | false
      try {
        trustProxy = loadConfig({ TRUST_PROXY: value }, '/x').trustProxy
      } catch (err) {
        assert.ok(err instanceof ConfigError && err.message.startsWith('TRUST_PROXY: '), `${value}: ${String(err)}`)
        continue
      }
      assert.doesNotThrow(() => Fastify({ trustProxy }), value)
    }
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/32, ::1/128' }, '/x').trustProxy, ['10.0.0.0/32', '::1/128'])
  })
})

describe('tracing settings (OpenTelemetry)', () => {
  it('is on with an OTLP endpoint or OTEL_TRACES_EXPORTER=otlp, off otherwise and when switched off', () => {
    assert.equal(loadConfig({}).tracing, undefined)
    assert.equal(loadConfig({ OTEL_SERVICE_NAME: 'shop', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).tracing, undefined)
    const w3c = ['tracecontext', 'baggage']
    assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing, { serviceName: 'petstore', protocol: 'http/protobuf', propagators: w3c })
    assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }).tracing, { serviceName: 'petstore', protocol: 'http/protobuf', propagators: w3c })
    assert.deepEqual(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SERVICE_NAME: 'shop' }).tracing, { serviceName: 'shop', protocol: 'http/protobuf', propagators: w3c })
    // A service.name in the resource attributes is the SDK's to apply: no default over it.
    assert.deepEqual(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_RESOURCE_ATTRIBUTES: 'team=pets,service.name=shop' }).tracing, { serviceName: undefined, protocol: 'http/protobuf', propagators: w3c })
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing, undefined)
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing, undefined)
  })

  it('takes the encoding (the traces variable first) and the propagators', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }
    assert.equal(loadConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).tracing?.protocol, 'http/json')
    assert.equal(loadConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }).tracing?.protocol, 'http/protobuf')
    assert.deepEqual(loadConfig({ ...on, OTEL_PROPAGATORS: ' baggage, tracecontext,baggage ' }).tracing?.propagators, ['baggage', 'tracecontext'])
    assert.deepEqual(loadConfig({ ...on, OTEL_PROPAGATORS: 'tracecontext' }).tracing?.propagators, ['tracecontext'])
    assert.deepEqual(loadConfig({ ...on, OTEL_PROPAGATORS: 'tracecontext,none' }).tracing?.propagators, [])
    assert.deepEqual(loadConfig({ ...on, OTEL_PROPAGATORS: '' }).tracing?.propagators, ['tracecontext', 'baggage'])
  })

  it('refuses what the service does not support, naming the variable', () => {
    assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), (e: Error) => e instanceof ConfigError && e.message.startsWith('OTEL_EXPORTER_OTLP_PROTOCOL:'))
    assert.throws(() => loadConfig({ OTEL_TRACES_EXPORTER: 'zipkin' }), (e: Error) => e instanceof ConfigError && e.message.startsWith('OTEL_TRACES_EXPORTER:'))
    assert.throws(() => loadConfig({ OTEL_SDK_DISABLED: 'yes' }), (e: Error) => e instanceof ConfigError && e.message.startsWith('OTEL_SDK_DISABLED:'))
    assert.throws(() => loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_PROPAGATORS: 'tracecontext,b3' }), (e: Error) => e instanceof ConfigError && e.message.startsWith('OTEL_PROPAGATORS: "b3"'))
  })
})
