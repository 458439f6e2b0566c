// requires: systemd-analyze
/*
 * The deployment files agree with the code: the Kubernetes manifests, the compose files and the
 * systemd unit run the image's or the checkout's server with settings the config accepts, probe
 * paths the server answers, a port it listens on, a grace period that covers SHUTDOWN_DELAY_MS +
 * SHUTDOWN_TIMEOUT_MS as that environment sets them, a user that is not root, and the database URL
 * from a Secret, never written in a file. The unit passes `systemd-analyze verify`.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { parse, parseAllDocuments } from 'yaml'
import { loadConfig, type Config } from '../../src/config.js'
import { buildTestApp } from '../helpers/app.js'
import { ROOT } from '../helpers/process.js'

const exec = promisify(execFile)
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8')
const pkg = JSON.parse(read('package.json')) as { version: string, bin: Record<string, string>, scripts: Record<string, string> }
const SOME_DATABASE = 'postgres://user:password@db.invalid:5432/petstore'
/** The server entry `npm start` runs (relative to the project directory). */
const SERVER_ENTRY = /\bnode (\S+\.js)\b/.exec(pkg.scripts.start!)![1]!

/** The final stage of the Dockerfile: its ENV settings, its USER and its CMD. */
function image (): { env: Record<string, string>, user: string, cmd: string[] } {
  const lines = read('Dockerfile').replace(/\\\n/g, ' ').split('\n').map(l => l.trim()).filter(l => l !== '' && !l.startsWith('#'))
  const stage = lines.slice(lines.findLastIndex(l => l.startsWith('FROM ')))
  const env: Record<string, string> = {}
  for (const l of stage.filter(l => l.startsWith('ENV '))) {
    for (const pair of l.slice(4).trim().split(/\s+/)) {
      const eq = pair.indexOf('=')
      env[pair.slice(0, eq)] = pair.slice(eq + 1)
    }
  }
  const user = stage.findLast(l => l.startsWith('USER '))!.slice(5).trim()
  const cmd = JSON.parse(stage.findLast(l => l.startsWith('CMD '))!.slice(4)) as string[]
  return { env, user, cmd }
}

function graceMs (config: Config): number {
  return config.shutdownDelayMs + config.shutdownTimeoutMs
}

/** "20s", "1m30s" → milliseconds (compose durations). */
function duration (value: string): number {
  let ms = 0
  for (const [, n, unit] of value.matchAll(/(\d+)(ms|s|m|h)/g)) ms += Number(n) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms']
  return ms
}

interface K8sEnv { name: string, value?: string, valueFrom?: { secretKeyRef?: { name: string, key: string } } }
interface K8sContainer {
  image: string
  command?: string[]
  env: K8sEnv[]
  ports?: Array<{ name: string, containerPort: number }>
  readinessProbe?: { httpGet: { path: string, port: string }, periodSeconds: number, failureThreshold: number }
  livenessProbe?: { httpGet: { path: string, port: string } }
  startupProbe?: { httpGet: { path: string, port: string } }
  securityContext: { readOnlyRootFilesystem: boolean, allowPrivilegeEscalation: boolean, capabilities: { drop: string[] } }
  volumeMounts?: Array<{ name: string, mountPath: string }>
  resources: { requests: Record<string, string>, limits: Record<string, string> }
}
interface K8sPodSpec {
  terminationGracePeriodSeconds?: number
  securityContext: { runAsNonRoot: boolean, runAsUser: number }
  containers: K8sContainer[]
}
type K8sObject = { kind: string, metadata: { name: string }, spec: any }

function k8s (file: string): K8sObject[] {
  return parseAllDocuments(read(`deploy/kubernetes/${file}`)).map(d => d.toJS() as K8sObject)
}

/** The settings a container runs with: the image's, then the manifest's, the database URL standing in for the Secret's. */
function containerConfig (c: K8sContainer): Readonly<Config> {
  const env: Record<string, string> = { ...image().env }
  for (const e of c.env) {
    if (e.valueFrom?.secretKeyRef !== undefined) env[e.name] = SOME_DATABASE
    else env[e.name] = e.value!
  }
  return loadConfig(env, '/app')
}

function assertLockedDown (spec: K8sPodSpec, c: K8sContainer): void {
  assert.equal(spec.securityContext.runAsNonRoot, true)
  // The image's user is node, uid 1000 in the official base (test/deploy/image.test.ts checks `id -u` in the image).
  assert.equal(image().user, 'node')
  assert.equal(spec.securityContext.runAsUser, 1000)
  assert.equal(c.securityContext.readOnlyRootFilesystem, true)
  assert.equal(c.securityContext.allowPrivilegeEscalation, false)
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL'])
  assert.ok(c.resources.requests.cpu !== undefined && c.resources.requests.memory !== undefined && c.resources.limits.memory !== undefined)
  // The database URL comes from the Secret only.
  const db = c.env.find(e => e.name === 'DATABASE_URL')!
  assert.deepEqual(db.valueFrom?.secretKeyRef, { name: 'petstore-database', key: 'url' })
  assert.equal(db.value, undefined)
  assert.equal(c.image, `petstore:${pkg.version}`)
}

describe('deployment files agree with the code', () => {
  it('Kubernetes: the Deployment probes paths the server answers on the port it listens on, waits out its shutdown, runs non-root and read-only', async (t) => {
    const [deployment, service, pdb] = k8s('deployment.yaml') as [K8sObject, K8sObject, K8sObject]
    assert.deepEqual([deployment.kind, service.kind, pdb.kind], ['Deployment', 'Service', 'PodDisruptionBudget'])
    const spec = deployment.spec.template.spec as K8sPodSpec
    const [c] = spec.containers as [K8sContainer]
    const config = containerConfig(c)
    assert.equal(config.host, '0.0.0.0')
    assert.equal(config.database.kind, 'postgres')
    assert.equal(c.ports!.find(p => p.name === 'http')!.containerPort, config.port)
    assert.equal(c.ports!.find(p => p.name === 'metrics')!.containerPort, config.metrics!.port)
    assert.equal(config.metrics!.host, '0.0.0.0')
    assert.deepEqual([c.readinessProbe!.httpGet, c.livenessProbe!.httpGet, c.startupProbe!.httpGet],
      [{ path: '/readyz', port: 'http' }, { path: '/healthz', port: 'http' }, { path: '/healthz', port: 'http' }])
    // Readiness fails within the drain, so the pod leaves the endpoints before it stops accepting.
    assert.ok(c.readinessProbe!.periodSeconds * c.readinessProbe!.failureThreshold * 1000 <= config.shutdownDelayMs)
    assert.ok(spec.terminationGracePeriodSeconds! * 1000 >= graceMs(config), `terminationGracePeriodSeconds ${spec.terminationGracePeriodSeconds} covers ${graceMs(config)} ms`)
    assertLockedDown(spec, c)
    const mounts = c.volumeMounts!.map(m => m.mountPath)
    assert.ok(mounts.includes('/tmp'))
    assert.ok(mounts.includes(dirname(config.firstKeyFile)), `a writable volume where the first key goes (${config.firstKeyFile})`)

    assert.deepEqual(service.spec.selector, deployment.spec.selector.matchLabels)
    assert.equal(service.spec.ports[0].targetPort, 'http')
    assert.deepEqual(pdb.spec.selector, deployment.spec.selector)
    assert.ok(pdb.spec.minAvailable < deployment.spec.replicas)
    assert.equal(deployment.spec.strategy.rollingUpdate.maxUnavailable, 0)

    // The probe paths are the server's, and answer 200.
    const app = await buildTestApp(t)
    for (const path of ['/readyz', '/healthz']) assert.equal((await app.app.inject({ method: 'GET', url: path })).statusCode, 200, path)
  })

  it('Kubernetes: the migration Job runs `petstore migrate` from the same image and Secret, locked down alike', () => {
    const [job] = k8s('migrate-job.yaml') as [K8sObject]
    assert.equal(job.kind, 'Job')
    const spec = job.spec.template.spec as K8sPodSpec & { restartPolicy: string }
    const [c] = spec.containers as [K8sContainer]
    assert.deepEqual(c.command, ['petstore', 'migrate'])
    assert.ok('petstore' in pkg.bin)
    assert.equal(spec.restartPolicy, 'Never')
    assertLockedDown(spec, c)
  })

  it('compose: the instances listen where they are published and checked, and stop within stop_grace_period', () => {
    const img = image()
    assert.deepEqual(img.cmd, ['node', `/app/${SERVER_ENTRY}`], 'the image runs what npm start runs')
    for (const [file, names] of [['compose.yaml', ['petstore']], ['compose.scale.yaml', ['app1', 'app2']]] as const) {
      const doc = parse(read(file), { merge: true }) as { services: Record<string, { environment?: Record<string, string>, stop_grace_period: string, healthcheck: { test: string[] }, ports?: string[], read_only: boolean }> }
      for (const name of names) {
        const s = doc.services[name]!
        const env = Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, k === 'DATABASE_URL' ? SOME_DATABASE : v]))
        const config = loadConfig({ ...img.env, ...env }, '/app')
        assert.ok(duration(s.stop_grace_period) >= graceMs(config), `${file} ${name}: stop_grace_period covers ${graceMs(config)} ms`)
        assert.match(s.healthcheck.test.join(' '), new RegExp(`http://127\\.0\\.0\\.1:${config.port}/readyz`))
        assert.equal(s.read_only, true)
        for (const p of s.ports ?? []) assert.match(p, new RegExp(`^127\\.0\\.0\\.1:.*:${config.port}$`))
      }
    }
    const haproxy = read('deploy/compose/haproxy.cfg')
    assert.match(haproxy, /option httpchk GET \/readyz/)
    const [, inter, fall] = /inter (\d+)s fall (\d+)/.exec(haproxy)!
    const scale = parse(read('compose.scale.yaml'), { merge: true }) as { 'x-petstore': { environment: Record<string, string> } }
    const config = loadConfig({ ...img.env, ...scale['x-petstore'].environment, DATABASE_URL: SOME_DATABASE }, '/app')
    assert.ok(Number(inter) * Number(fall) * 1000 <= config.shutdownDelayMs, 'the balancer takes a draining instance out before it stops accepting')
    const pgbouncer = read('deploy/compose/pgbouncer/pgbouncer.ini')
    assert.match(pgbouncer, /^pool_mode = transaction$/m)
    assert.ok(Number(/^max_client_conn = (\d+)$/m.exec(pgbouncer)![1]) >= 2 * config.pgPoolMax)
  })

  it('systemd: the unit verifies clean, runs the built server with settings the config accepts and stops within TimeoutStopSec', async () => {
    const unit = join(ROOT, 'deploy/systemd/petstore.service')
    const lines = readFileSync(unit, 'utf8').split('\n')
    const values = (key: string): string[] => lines.filter(l => l.startsWith(`${key}=`)).map(l => l.slice(key.length + 1))
    // verify checks that ExecStart's program exists: the unit as installed with the checkout in its
    // place (WorkingDirectory → this checkout, after `npm ci`).
    const installed = join(mkdtempSync(join(tmpdir(), 'petstore-unit-')), 'petstore.service')
    writeFileSync(installed, readFileSync(unit, 'utf8').replaceAll(values('WorkingDirectory')[0]!, ROOT.replace(/\/$/, '')))
    try {
      const { stdout, stderr } = await exec('systemd-analyze', ['verify', installed])
      assert.equal(stdout + stderr, '', 'systemd-analyze verify prints nothing')
    } finally {
      rmSync(dirname(installed), { recursive: true, force: true })
    }
    // The Node `npm ci` put in place, whatever the system's is (docs/reference/node-runtime.md).
    assert.match(values('ExecStart')[0]!, new RegExp(`^${values('WorkingDirectory')[0]}/node_modules/\\.bin/node `))
    const env = Object.fromEntries(values('Environment').map(v => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)]))
    const config = loadConfig(env, '/opt/petstore')
    assert.deepEqual(config.database, { kind: 'sqlite', path: '/var/lib/petstore/petstore.db' })
    assert.equal(dirname(config.firstKeyFile), `/var/lib/${values('StateDirectory')[0]}`)
    assert.ok(Number(values('TimeoutStopSec')[0]) * 1000 >= graceMs(config))
    assert.match(values('ExecStart')[0]!, new RegExp(` ${values('WorkingDirectory')[0]}/${SERVER_ENTRY}$`))
    assert.notEqual(values('User')[0], 'root')
    for (const option of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes', 'CapabilityBoundingSet=']) assert.ok(lines.includes(option), option)
  })
})
