import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { recordLine } from '../../src/services/transfer/format.js'
import { STORES, tempDir, testDatabaseUrl } from '../helpers/app.js'
import { runCli } from '../helpers/process.js'
import { afterStoreLines, exportLines, sampleRecords, tableCounts, withDb, writeLines } from '../helpers/transfer.js'

/** More pets than one PostgreSQL insert batch (5,000), so a late failure must undo batches already written. */
const PETS = 6000
const EMPTY = { settings: 0, api_keys: 0, pets: 0, idempotency_keys: 0 }

for (const store of STORES) {
  describe(`petstore import [${store}]`, () => {
    it('refuses a truncated file, a bad line or another format version: exit 1 naming the line, the store unchanged', async (t) => {
      const dir = tempDir(t)
      const env = { DATABASE_URL: await testDatabaseUrl(t, store, dir) }
      const good = exportLines(sampleRecords(PETS))
      // Lines: 1 header, 2 setting, 3–4 keys, 5…6004 pets, 6005 Idempotency-Key, 6006 end.
      const petLine = (n: number) => 4 + n
      const text = good.map(l => l + '\n').join('')
      const cutInLine = text.indexOf('\n', text.indexOf(good[petLine(5000) - 1]!)) - 10
      const cases: Array<[string, string, RegExp]> = [
        ['cut mid-line', text.slice(0, cutInLine), new RegExp(`^petstore: line ${petLine(5000)}: the file ends in the middle of this line \\(no final newline\\): it is truncated\\n$`)],
        ['cut at a line end', good.slice(0, petLine(5500)).map(l => l + '\n').join(''), new RegExp(`^petstore: line ${petLine(5501)}: the file ends without its end line: it is truncated\\n$`)],
        ['bad status', replaceLine(good, petLine(4999), l => l.replace(/"status":"\w+"/, '"status":"lost"')), new RegExp(`^petstore: line ${petLine(4999)}: pet field 'status' must be one of available, pending, sold\\n$`)],
        ['bad JSON', replaceLine(good, petLine(5999), l => l.slice(0, -1)), new RegExp(`^petstore: line ${petLine(5999)}: not valid JSON`)],
        ['id past int64', replaceLine(good, petLine(5200), l => l.replace(/"id":\d+/, '"id":9223372036854775808')), new RegExp(`^petstore: line ${petLine(5200)}: pet field 'id' must be an integer from -9223372036854775808 to 9223372036854775807\\n$`)],
        ['a lone surrogate', replaceLine(good, petLine(10), l => l.replace(/"name":"[^"]*"/, '"name":"\\ud83d"')), new RegExp(`^petstore: line ${petLine(10)}: pet field 'name' must be well-formed Unicode`)],
        ['a duplicate id', replaceLine(good, petLine(5100), () => good[petLine(5099) - 1]!), new RegExp(`^petstore: line ${petLine(5100)}: pet id 5099 is not greater than the previous pet's id 5099`)],
        ['an altered pet', replaceLine(good, petLine(3), l => l.replace('"pet 2"', '"pet two"')), /^petstore: line 6006: the pets checksum is [0-9a-f]{64}, not [0-9a-f]{64} as the end line says: the file was altered\n$/],
        ['a dangling reference', replaceLine(good, 6005, l => l.replace('"petId":1,', '"petId":999999,')),
          /^petstore: line 6005: Idempotency-Key "idem-1" refers to API key 1 or pet 999999, which is neither in the file nor in the target store\n$/],
        ['a missing count', replaceLine(good, 1, l => l.replace(`"pets":${PETS}`, `"pets":${PETS + 1}`)), /^petstore: line 6006: the file holds 6000 pets records but its header announces 6001\n$/],
        ['a count left out', replaceLine(good, 1, l => l.replace(`"pets":${PETS},`, '')), /^petstore: line 1: the header lacks the field 'counts.pets'\n$/],
        ['a key id past 2^53', replaceLine(good, 4, l => l.replace('"id":2,', '"id":9007199254740992,')),
          /^petstore: line 4: apiKey field 'id' must be an integer from 1 to 9007199254740991\n$/],
        ['version 3', replaceLine(good, 1, l => l.replace('"version":2', '"version":3')), /^petstore: line 1: format version 3 is not supported \(this petstore reads versions 1 and 2\)\n$/],
        ['an unknown scope', replaceLine(good, 3, l => l.replace('"scopes":["pets:read"]', '"scopes":["pets:admin"]')),
          /^petstore: line 3: apiKey field 'scopes' must be a non-empty array of distinct scopes among pets:read, pets:write\n$/],
        ['no scope', replaceLine(good, 3, l => l.replace('"scopes":["pets:read"]', '"scopes":[]')), /^petstore: line 3: apiKey field 'scopes' must be a non-empty array/],
        ['a bad expiry', replaceLine(good, 3, l => l.replace(/"expiresAt":"[^"]*"/, '"expiresAt":"tomorrow"')),
          /^petstore: line 3: apiKey field 'expiresAt' must be a UTC time like 2026-01-31T12:00:00.000Z or null\n$/],
        ['a version 1 key with scopes', replaceLine(good, 1, l => l.replace('"version":2', '"version":1')),
          /^petstore: line 3: apiKey has an unknown field 'scopes' \(allowed: type, id, name, hash, createdAt, lastUsedAt, revokedAt\)\n$/],
        ['not an export', '{"hello":"world"}\n', /^petstore: line 1: not a petstore export/],
        ['empty', '', /^petstore: line 1: the file is empty/]
      ]
      for (const [what, content, stderr] of cases) {
        const file = join(dir, 'bad.ndjson')
        writeFileSync(file, content)
        const r = await runCli(['import', file], env)
        assert.equal(r.code, 1, `${what}: ${r.stderr}`)
        assert.match(afterStoreLines(r.stderr), stderr, what)
        assert.equal(r.stdout, '', what)
        assert.deepEqual(await tableCounts(env.DATABASE_URL), EMPTY, `${what}: the store is unchanged`)
      }

      // The same store then takes the good file, from stdin, whole.
      const ok = await runCli(['import', '--json'], env, text)
      assert.equal(ok.code, 0, ok.stderr)
      assert.deepEqual(await tableCounts(env.DATABASE_URL), { settings: 1, api_keys: 2, pets: PETS, idempotency_keys: 1 })
    })

    it('reads a version 1 file, whose keys get every scope and no expiry', async (t) => {
      const env = { DATABASE_URL: await testDatabaseUrl(t, store) }
      const v1 = exportLines(sampleRecords(3)).map((l, i) => i === 0
        ? l.replace('"version":2', '"version":1')
        : l.replace(/"scopes":\[[^\]]*\],/, '').replace(/"expiresAt":("[^"]*"|null),/, ''))
      assert.match(v1[2]!, /^\{"type":"apiKey","id":1,"name":"key 1","hash":"[0-9a-f]{64}","createdAt":"[^"]+","lastUsedAt":null,"revokedAt":null\}$/)
      const r = await runCli(['import'], env, v1.map(l => l + '\n').join(''))
      assert.equal(r.code, 0, r.stderr)
      const keys = await withDb(env.DATABASE_URL, async (sql) => await sql('SELECT id, scopes, expires_at FROM api_keys ORDER BY id'))
      assert.deepEqual(keys.map(k => [Number(k.id), k.scopes, k.expires_at]), [[1, 'pets:read pets:write', null], [2, 'pets:read pets:write', null]])
    })

    it('refuses a non-empty store unless --into-nonempty, then adds without collisions and keeps the store\'s settings', async (t) => {
      const dir = tempDir(t)
      const env = { DATABASE_URL: await testDatabaseUrl(t, store, dir) }
      const first = writeLines(join(dir, 'first.ndjson'), exportLines(sampleRecords(10, { cursorKey: '11'.repeat(32) })))
      assert.equal((await runCli(['import', first], env)).code, 0)
      const before = await tableCounts(env.DATABASE_URL)

      const second = writeLines(join(dir, 'second.ndjson'), exportLines(sampleRecords(10, { keyIds: [5, 6], firstPetId: 100n, cursorKey: '22'.repeat(32) })))
      const refused = await runCli(['import', second], env)
      assert.equal(refused.code, 1)
      assert.equal(afterStoreLines(refused.stderr), 'petstore: the target store is not empty (10 pets, 2 API keys, 1 Idempotency-Keys); import into an empty store, or pass --into-nonempty to add to it\n')
      assert.deepEqual(await tableCounts(env.DATABASE_URL), before)

      const colliding = await runCli(['import', '--into-nonempty', first], env)
      assert.equal(colliding.code, 1)
      assert.equal(afterStoreLines(colliding.stderr), 'petstore: line 3: API key id 1 (or a key with the same hash) is already in the target store\n')
      const petCollision = writeLines(join(dir, 'pets.ndjson'), exportLines(sampleRecords(3, { keyIds: [7, 8], firstPetId: 10n })))
      const pets = await runCli(['import', '--into-nonempty', petCollision], env)
      assert.equal(pets.code, 1)
      assert.equal(afterStoreLines(pets.stderr), 'petstore: line 5: pet id 10 is already in the target store\n')
      assert.deepEqual(await tableCounts(env.DATABASE_URL), before)

      const added = await runCli(['import', '--into-nonempty', '--json', second], env)
      assert.equal(added.code, 0, added.stderr)
      assert.equal((JSON.parse(added.stdout) as { intoNonempty: boolean }).intoNonempty, true)
      assert.deepEqual(await tableCounts(env.DATABASE_URL), { settings: 1, api_keys: 4, pets: 20, idempotency_keys: 2 })
      const out = join(dir, 'after.ndjson')
      assert.equal((await runCli(['export', '--out', out], env)).code, 0)
      assert.ok(readFileSync(out, 'utf8').includes(recordLine({ type: 'setting', name: 'cursor_hmac_key', value: '11'.repeat(32) })), 'the store kept its own cursor key')
      // Sequences moved past the highest imported ids: the next key gets id 7.
      const key = await runCli(['keys', 'create', '--name', 'next'], env)
      assert.match(key.stderr, /created key 7 /)
    })
  })
}

function replaceLine (lines: string[], no: number, fn: (line: string) => string): string {
  return lines.map((l, i) => (i === no - 1 ? fn(l) : l) + '\n').join('')
}
