import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
const dist = process.argv[2] ?? './dist'
const { loadConfig } = await import(join(process.cwd(), dist, 'config.js'))
const { openStore } = await import(join(process.cwd(), dist, 'store/index.js'))
const { buildApp } = await import(join(process.cwd(), dist, 'app.js'))
const { openSqlite } = await import(join(process.cwd(), dist, 'store/sqlite/connection.js'))
const { migrateSqlite } = await import(join(process.cwd(), dist, 'store/sqlite/migrations.js'))
const { hashApiKey } = await import(join(process.cwd(), dist, 'services/api-keys.js'))
const tmp = mkdtempSync(join(tmpdir(), 'inj-'))
const dbPath = join(tmp, 'p.db')
const KEY = 'psk_' + 'p'.repeat(43)
const db = openSqlite(dbPath, 'OFF'); migrateSqlite(db)
db.prepare('INSERT INTO api_keys (name, key_hash, created_at) VALUES (?, ?, ?)').run('ab', hashApiKey(KEY), new Date().toISOString())
db.prepare(`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000) INSERT INTO pets (name, category_id, status) SELECT 'pet-' || x, x % 97, 'available' FROM n`).run()
db.close()
const config = loadConfig({ DATABASE_URL: `sqlite:${dbPath}`, RATE_LIMIT_MAX: '1000000000', EVENT_LOOP_MAX_DELAY_MS: '0' }, tmp)
const store = await openStore(config)
const app = await buildApp({ config, store, logger: false })
await app.ready()
const headers = { authorization: `Bearer ${KEY}` }
const urls = (process.env.URLS ?? '/v1/pets/500,/v1/pets?limit=20,/v1/pets').split(',')
const C = 16
async function block (url, n) {
  const c0 = process.cpuUsage()
  for (let i = 0; i < n; i += C) {
    const ps = []
    for (let k = 0; k < C; k++) ps.push(app.inject({ url, headers }))
    const rs = await Promise.all(ps)
    if (rs[0].statusCode !== 200) throw new Error(url + ' ' + rs[0].statusCode + rs[0].body)
  }
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / n
}
for (const u of urls) await block(u, 4000)
const res = Object.fromEntries(urls.map(u => [u, []]))
for (let r = 0; r < 9; r++) for (const u of urls) res[u].push(await block(u, 3000))
const med = xs => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const u of urls) console.log(u.padEnd(20), med(res[u]).toFixed(1), 'µs/req')
await app.close()
