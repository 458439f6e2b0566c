// requires: promtool, redis-server
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parser } from '@prometheus-io/lezer-promql'
import { parse as parseYaml } from 'yaml'
import { tempDir } from '../helpers/app.js'
import { metricsUrlOf, startServer, type RunningServer } from '../helpers/process.js'
import { startRedisServer } from '../helpers/redis.js'
import { makeKey, waitReady } from '../helpers/server-process.js'

const DIR = fileURLToPath(new URL('../../deploy/prometheus/', import.meta.url))
const RULES = join(DIR, 'petstore.rules.yml')
const DASHBOARD = fileURLToPath(new URL('../../deploy/grafana/petstore-dashboard.json', import.meta.url))

function promtool (args: string[]): Promise<{ code: number, out: string }> {
  return new Promise(resolve => {
    execFile('promtool', args, { cwd: DIR, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, out: stdout + stderr })
    })
  })
}

interface Rule { record?: string, alert?: string, expr: string }
const rules = (parseYaml(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap(g => g.rules)

interface Matcher { label: string, op: string, value: string }
interface Selector { name: string, matchers: Matcher[] }

/** The vector selectors and grouping labels (by, on, ignoring…) of a PromQL expression, from Prometheus's own grammar. */
function referencesOf (expr: string): { selectors: Selector[], groupingLabels: string[] } {
  const selectors: Selector[] = []
  const groupingLabels: string[] = []
  const text = (from: number, to: number) => expr.slice(from, to)
  const cursor = parser.parse(expr).cursor()
  do {
    if (cursor.type.isError) assert.fail(`PromQL parse error at ${cursor.from} in: ${expr}`)
    if (cursor.name === 'VectorSelector') {
      const node = cursor.node
      const id = node.getChild('Identifier')
      const matchers: Matcher[] = []
      for (const m of node.getChild('LabelMatchers')?.getChildren('UnquotedLabelMatcher') ?? []) {
        const label = m.getChild('LabelName')!
        const op = m.getChild('MatchOp')!
        const value = m.getChild('StringLiteral')!
        matchers.push({ label: text(label.from, label.to), op: text(op.from, op.to), value: JSON.parse(text(value.from, value.to)) as string })
      }
      selectors.push({ name: id === null ? '' : text(id.from, id.to), matchers })
    } else if (cursor.name === 'GroupingLabels') {
      for (const l of cursor.node.getChildren('LabelName')) groupingLabels.push(text(l.from, l.to))
    }
  } while (cursor.next())
  return { selectors, groupingLabels }
}

type Sample = { name: string, labels: Record<string, string> }

/** The samples of a Prometheus text exposition (names and labels; the values do not matter here). */
function parseExposition (body: string): Sample[] {
  const samples: Sample[] = []
  for (const line of body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line)
    assert.ok(m !== null, `not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = JSON.parse(`"${l[2]!}"`) as string
    samples.push({ name: m[1]!, labels })
  }
  return samples
}

function matches (m: Matcher, value: string | undefined): boolean {
  const v = value ?? ''
  switch (m.op) {
    case '=': return v === m.value
    case '!=': return v !== m.value
    case '=~': return new RegExp(`^(?:${m.value})$`).test(v)
    case '!~': return !new RegExp(`^(?:${m.value})$`).test(v)
    default: throw new Error(`unknown matcher ${m.op}`)
  }
}

/** Labels Prometheus adds to every scraped series (its target labels). */
const TARGET_LABELS = ['job', 'instance']
/** Series Prometheus itself makes for every target. */
const SCRAPE_SERIES = ['up']

/**
 * Every problem of `exprs` against a scrape: a selector naming a series the service did not send
 * (nor a recording rule of the file), a label it never carries, or an equality or regex matcher
 * that no sample satisfies; a grouping label that is on no series.
 */
function unknownReferences (exprs: string[], samples: Sample[], recorded: Set<string>): string[] {
  const problems: string[] = []
  const labelNames = new Set([...TARGET_LABELS, ...samples.flatMap(s => Object.keys(s.labels))])
  for (const expr of exprs) {
    const { selectors, groupingLabels } = referencesOf(expr)
    for (const sel of selectors) {
      if (recorded.has(sel.name) || SCRAPE_SERIES.includes(sel.name)) continue
      const series = samples.filter(s => s.name === sel.name)
      if (series.length === 0) {
        problems.push(`${sel.name}: not exported`)
        continue
      }
      const seriesLabels = new Set([...TARGET_LABELS, ...series.flatMap(s => Object.keys(s.labels))])
      for (const m of sel.matchers) if (!seriesLabels.has(m.label)) problems.push(`${sel.name}: has no label ${m.label}`)
      // The positive matchers together must select something the service sent.
      const positive = sel.matchers.filter(m => (m.op === '=' || m.op === '=~') && !TARGET_LABELS.includes(m.label))
      if (!series.some(s => positive.every(m => matches(m, s.labels[m.label])))) {
        problems.push(`${sel.name}{${positive.map(m => `${m.label}${m.op}"${m.value}"`).join(', ')}}: no such series was sent`)
      }
    }
    for (const l of groupingLabels) if (!labelNames.has(l)) problems.push(`grouping label ${l}: on no series`)
  }
  return problems
}

/** Requests on a fresh connection each; the answer's status. */
async function call (server: RunningServer, method: string, path: string, key?: string, body?: unknown): Promise<number> {
  const headers: Record<string, string> = { connection: 'close' }
  if (key !== undefined) headers.authorization = `Bearer ${key}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${server.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  await res.arrayBuffer()
  return res.status
}

describe('Prometheus rules (deploy/prometheus)', () => {
  it('pass promtool check rules', async () => {
    const { code, out } = await promtool(['check', 'rules', 'petstore.rules.yml'])
    assert.equal(code, 0, out)
    assert.match(out, /SUCCESS: \d+ rules found/)
  })

  it('pass their promtool unit tests, which test every alert', async () => {
    const { code, out } = await promtool(['test', 'rules', 'petstore.rules.test.yml'])
    assert.equal(code, 0, out)
    const tested = new Set((parseYaml(readFileSync(join(DIR, 'petstore.rules.test.yml'), 'utf8')) as { tests: Array<{ alert_rule_test?: Array<{ alertname: string, exp_alerts: unknown[] }> }> })
      .tests.flatMap(t => (t.alert_rule_test ?? []).filter(a => a.exp_alerts.length > 0).map(a => a.alertname)))
    for (const r of rules) if (r.alert !== undefined) assert.ok(tested.has(r.alert), `${r.alert} has no unit test in which it fires`)
  })

  it('name only series, labels and label values a running server exports, as does the Grafana dashboard', async (t) => {
    const dir = tempDir(t)
    const db = join(dir, 'petstore.db')
    const key = await makeKey(db)
    const redis = await startRedisServer(t)
    const server = await startServer(t, {
      DATABASE_URL: `sqlite:${db}`,
      METRICS_PORT: '0',
      REDIS_URL: redis.url,
      RATE_LIMIT_MAX: '40',
      RATE_LIMIT_ANON_MAX: '3',
      // Shedding on, with a bound an idle server stays far below, so that the freeze below sheds.
      EVENT_LOOP_MAX_DELAY_MS: '50'
    })
    const metricsUrl = await metricsUrlOf(server)
    // Ready (the SQLite writer up), and past the event-loop delay of the start itself.
    await waitReady(Number(new URL(server.url).port))

    // A request on every operation of the OpenAPI document, and answers of every kind the rules name.
    const document = JSON.parse(readFileSync(fileURLToPath(new URL('../../openapi/openapi.json', import.meta.url)), 'utf8')) as { paths: Record<string, Record<string, { operationId?: string }>> }
    const operations = Object.values(document.paths).flatMap(p => Object.values(p).map(o => o.operationId).filter(id => id !== undefined))
    const sent = new Set<string>()
    const op = async (id: string, status: number, run: () => Promise<number>) => {
      sent.add(id)
      assert.equal(await run(), status, id)
    }
    await op('index', 200, () => call(server, 'GET', '/'))
    await op('liveness', 200, () => call(server, 'GET', '/healthz'))
    await op('readiness', 200, () => call(server, 'GET', '/readyz'))
    await op('createPet', 201, () => call(server, 'POST', '/v1/pets', key, { name: 'Rex', categoryId: 1, status: 'available' }))
    await op('listPets', 200, () => call(server, 'GET', '/v1/pets', key))
    await op('listPets', 200, () => call(server, 'GET', '/v1/pets', key))
    await op('getPet', 200, () => call(server, 'GET', '/v1/pets/1', key))
    await op('getPet', 200, () => call(server, 'GET', '/v1/pets/1', key))
    await op('listOrders', 501, () => call(server, 'GET', '/v1/store/orders', key))
    assert.deepEqual([...sent].sort(), [...operations].sort(), 'a request on every operation of the document')
    // Failed authentication from one address past RATE_LIMIT_ANON_MAX: 429 (scope=address).
    const anon: number[] = []
    for (let i = 0; i < 5; i++) anon.push(await call(server, 'GET', '/v1/pets'))
    assert.ok(anon.includes(429), `no 429 for failed authentication: ${anon.join(' ')}`)
    // A key past RATE_LIMIT_MAX: 429 (scope=key).
    let keyLimited = false
    for (let i = 0; i < 60 && !keyLimited; i++) keyLimited = await call(server, 'GET', '/v1/pets', key) === 429
    assert.ok(keyLimited, 'the key was never rate-limited')
    // The rate-limit Redis gone: a store error (store=redis), the request let through.
    await redis.stop()
    assert.equal(await call(server, 'GET', '/v1/pets', key), 200)
    // The process frozen for 5 s: once it runs again, its event-loop delay is past the bound and it
    // sheds until the next sample (the delay is sampled once a second; the sample taken as it resumes
    // may predate the freeze). Tried three times: a freeze late in a sample interval weighs less.
    let shed = false
    for (let attempt = 0; attempt < 3 && !shed; attempt++) {
      server.child.kill('SIGSTOP')
      await new Promise(resolve => setTimeout(resolve, 5000))
      server.child.kill('SIGCONT')
      for (const end = Date.now() + 3000; !shed && Date.now() < end;) {
        shed = await call(server, 'GET', '/readyz') === 503
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    }
    assert.ok(shed, 'never shed a request after the freeze')

    const body = await (await fetch(metricsUrl)).text()
    const samples = parseExposition(body)
    // The check sees what it must: these come from the traffic above.
    for (const expected of ['petstore_rate_limited_total{scope="key"}', 'petstore_rate_limited_total{scope="address"}', 'petstore_store_errors_total{store="redis"}', 'petstore_read_cache_hits_total{kind="pet"}']) {
      assert.ok(body.includes(expected), `${expected} missing from the scrape:\n${body}`)
    }
    assert.match(body, /^petstore_overload_rejections_total [1-9]/m)
    assert.match(body, new RegExp(`^petstore_getpet_sunset_timestamp_seconds ${Date.parse('2030-12-05T00:00:00Z') / 1000}$`, 'm'))
    assert.match(body, /^petstore_http_requests_total\{method="GET",route="\/readyz",status="503"\} [1-9]/m)

    const recorded = new Set(rules.flatMap(r => r.record === undefined ? [] : [r.record]))
    assert.deepEqual(unknownReferences(rules.map(r => r.expr), samples, recorded), [])
    // The Grafana dashboard's queries, with its job variable as Grafana expands "All".
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ id: number, targets: Array<{ expr: string }> }>, templating: { list: Array<{ query: string | unknown }> } }
    const queries = dashboard.panels.flatMap(p => p.targets.map(q => q.expr.replaceAll('$job', '.*')))
    for (const v of dashboard.templating.list) {
      const m = typeof v.query === 'string' ? /^label_values\((\w+), (\w+)\)$/.exec(v.query) : null
      if (m !== null) queries.push(`sum by (${m[2]!}) (${m[1]!})`)
    }
    assert.ok(queries.length >= dashboard.panels.length)
    assert.equal(new Set(dashboard.panels.map(p => p.id)).size, dashboard.panels.length, 'panel ids are unique')
    assert.deepEqual(unknownReferences(queries, samples, recorded), [])
    // The check itself finds a misspelt series, a missing label, and a value never sent.
    assert.deepEqual(unknownReferences([
      'rate(petstore_http_request_total[5m])',
      'petstore_rate_limited_total{reason="key"}',
      'petstore_http_requests_total{route="/v1/pets/{petId}"}',
      'sum by (tenant) (petstore_overload_rejections_total)'
    ], samples, recorded), [
      'petstore_http_request_total: not exported',
      'petstore_rate_limited_total: has no label reason',
      'petstore_rate_limited_total{reason="key"}: no such series was sent',
      'petstore_http_requests_total{route="/v1/pets/{petId}"}: no such series was sent',
      'grouping label tenant: on no series'
    ])
  })
})
