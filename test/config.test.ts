import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../src/config.js'

describe('loadConfig', () => {
  it('applies the documented defaults, resolving the database path against the working directory', () => {
    const c = loadConfig({}, '/srv/petstore')
    assert.equal(c.port, 8080)
    assert.equal(c.host, '127.0.0.1')
    assert.deepEqual(c.database, { kind: 'sqlite', path: '/srv/petstore/data/petstore.db' })
    assert.equal(c.logLevel, 'info')
    assert.equal(c.bodyLimit, 16384)
    assert.equal(c.keyCacheTtlMs, 500)
    assert.equal(c.sqliteSynchronous, 'FULL')
    assert.equal(c.getPetSunsetAt.toUTCString(), 'Thu, 05 Dec 2030 00:00:00 GMT')
    assert.equal(c.getPetDeprecatedAt.toISOString(), '2026-01-01T00:00:00.000Z')
    assert.ok(Object.isFrozen(c))
  })

  it('reads every variable it documents', () => {
    const c = loadConfig({ PORT: '0', HOST: '0.0.0.0', DATABASE_URL: 'sqlite:/var/lib/p.db', LOG_LEVEL: 'debug', BODY_LIMIT: '1024', KEY_CACHE_TTL_MS: '0', SQLITE_SYNCHRONOUS: 'EXTRA' }, '/x')
    assert.deepEqual([c.port, c.host, c.database, c.logLevel, c.bodyLimit, c.keyCacheTtlMs, c.sqliteSynchronous],
      [0, '0.0.0.0', { kind: 'sqlite', path: '/var/lib/p.db' }, 'debug', 1024, 0, 'EXTRA'])
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite::memory:' }, '/x').database, { kind: 'sqlite', path: ':memory:' })
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:rel/p.db' }, '/x').database, { kind: 'sqlite', path: '/x/rel/p.db' })
  })

  it('throws a ConfigError naming the variable for every bad value', async (t) => {
    const bad: Array<[string, string]> = [
      ['PORT', 'abc'], ['PORT', ''], ['PORT', '1.5'], ['PORT', '70000'], ['PORT', '-1'], ['PORT', '80 80'],
      ['DATABASE_URL', 'mysql://localhost/db'], ['DATABASE_URL', 'sqlite:'], ['DATABASE_URL', 'data/petstore.db'], ['DATABASE_URL', ''],
      ['LOG_LEVEL', 'loud'], ['LOG_LEVEL', 'INFO'], ['LOG_LEVEL', ''],
      ['BODY_LIMIT', '10'], ['BODY_LIMIT', 'big'],
      ['KEY_CACHE_TTL_MS', '5000'], ['KEY_CACHE_TTL_MS', '-1'],
      ['SQLITE_SYNCHRONOUS', 'full'], ['SQLITE_SYNCHRONOUS', 'ON'],
      ['GETPET_SUNSET_AT', 'tomorrow'], ['GETPET_DEPRECATED_AT', '2026-13-45T00:00:00Z'],
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
