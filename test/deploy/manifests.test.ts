// requires: systemd-analyze
/*
 * The deployment files agree with the code: the Kubernetes manifests, the compose files and the
 * systemd unit run the image's or the checkout's server with settings the config accepts, probe
 * paths the server answers, a port it listens on, a grace period that covers SHUTDOWN_DRAIN_MS +
 * SHUTDOWN_TIMEOUT_MS as that environment sets them, a user that is not root, and the database URL
 * from a Secret, never written in a file. The unit passes `systemd-analyze verify`. Every Kubernetes
 * manifest passes the Kubernetes API's JSON schemas (kubernetes-models, offline), a manifest with a
 * wrong field fails them, and kustomization.yaml applies every manifest but the CRD-dependent one.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { parse, parseAllDocuments } from 'yaml'
import { loadConfig, type Config } from '../../src/config/index.js'
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
  return config.shutdownDrainMs + config.shutdownTimeoutMs
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

/** The manifests of deploy/kubernetes (kustomization.yaml is kustomize's, not an API object). */
const MANIFESTS = readdirSync(join(ROOT, 'deploy/kubernetes')).filter(f => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort()
/** Needs a CustomResourceDefinition a plain cluster lacks: applied on its own. */
const NEEDS_CRD = new Set(['servicemonitor.yaml'])

/**
 * Checks `doc` against the JSON schema of its apiVersion and kind (kubernetes-models: the
 * Kubernetes API's OpenAPI schemas compiled to validators; the Prometheus Operator's CRDs from
 * @kubernetes-models/prometheus-operator). Throws naming the first violation, or an unknown kind.
 */
async function validateManifest (doc: { apiVersion?: unknown, kind?: unknown, [field: string]: unknown }): Promise<void> {
  const { apiVersion, kind } = doc
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') throw new Error('apiVersion and kind must be strings')
  const pkgName = apiVersion.startsWith('monitoring.coreos.com/') ? '@kubernetes-models/prometheus-operator' : 'kubernetes-models'
  let models: Record<string, new (data: unknown) => { validate: () => void }>
  try {
    models = await import(`${pkgName}/${apiVersion}`)
  } catch {
    throw new Error(`no schema for apiVersion ${apiVersion}`)
  }
  const Model = models[kind]
  if (Model === undefined) throw new Error(`no schema for ${apiVersion} ${kind}`)
  new Model(doc).validate()
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
    assert.ok(c.readinessProbe!.periodSeconds * c.readinessProbe!.failureThreshold * 1000 <= config.shutdownDrainMs)
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

  it('Kubernetes: every manifest passes the Kubernetes JSON schemas', async () => {
    assert.ok(MANIFESTS.length >= 4, MANIFESTS.join(' '))
    for (const file of MANIFESTS) {
      for (const [i, doc] of k8s(file).entries()) {
        await assert.doesNotReject(validateManifest(doc), `${file}, document ${i + 1} (${doc.kind})`)
      }
    }
  })

  it('Kubernetes: the schema check rejects a manifest with a wrong field type, a missing required field or an unknown kind', async () => {
    const [deployment] = k8s('deployment.yaml') as [K8sObject]
    await assert.rejects(validateManifest({ ...deployment, spec: { ...deployment.spec, replicas: '2' } }), /spec\/replicas must be integer/)
    const containers = deployment.spec.template.spec.containers.map(({ name: _, ...c }: { name: string }) => c)
    await assert.rejects(validateManifest({ ...deployment, spec: { ...deployment.spec, template: { ...deployment.spec.template, spec: { ...deployment.spec.template.spec, containers } } } }),
      /containers\/0 must have required property name/)
    const [policy] = k8s('networkpolicy.yaml') as [K8sObject]
    await assert.rejects(validateManifest({ ...policy, spec: { ...policy.spec, policyTypes: 'Ingress' } }), /spec\/policyTypes must be array/)
    const [monitor] = k8s('servicemonitor.yaml') as [K8sObject]
    await assert.rejects(validateManifest({ ...monitor, spec: { ...monitor.spec, endpoints: [{ port: 9464 }] } }), /endpoints\/0\/port must be string/)
    await assert.rejects(validateManifest({ ...deployment, kind: 'Deploymnet' }), /no schema for apps\/v1 Deploymnet/)
  })

  it('Kubernetes: replicas spread over nodes; the Service carries the metrics port with scrape annotations, and a ServiceMonitor scrapes it', () => {
    const [deployment, service] = k8s('deployment.yaml') as [K8sObject, K8sObject]
    const labels = deployment.spec.selector.matchLabels
    const spread = deployment.spec.template.spec.topologySpreadConstraints as Array<{ topologyKey: string, maxSkew: number, whenUnsatisfiable: string, labelSelector: { matchLabels: unknown } }>
    const byNode = spread.find(c => c.topologyKey === 'kubernetes.io/hostname')
    assert.ok(byNode !== undefined, 'spread over nodes')
    assert.deepEqual([byNode.maxSkew, byNode.whenUnsatisfiable, byNode.labelSelector.matchLabels], [1, 'DoNotSchedule', labels])
    assert.ok(spread.some(c => c.topologyKey === 'topology.kubernetes.io/zone'), 'spread over zones')
    const [c] = deployment.spec.template.spec.containers as [K8sContainer]
    const config = containerConfig(c)
    const metrics = (service.spec.ports as Array<{ name: string, port: number, targetPort: string }>).find(p => p.name === 'metrics')
    assert.deepEqual(metrics, { name: 'metrics', port: config.metrics!.port, targetPort: 'metrics' })
    for (const annotations of [service.metadata, deployment.spec.template.metadata].map(m => (m as { annotations: Record<string, string> }).annotations)) {
      assert.deepEqual(annotations, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(config.metrics!.port), 'prometheus.io/path': '/metrics' })
    }
    const [monitor] = k8s('servicemonitor.yaml') as [K8sObject]
    assert.equal(monitor.kind, 'ServiceMonitor')
    assert.deepEqual(monitor.spec.selector.matchLabels, (service.metadata as unknown as { labels: unknown }).labels)
    assert.deepEqual(monitor.spec.endpoints.map((e: { port: string, path: string }) => [e.port, e.path]), [['metrics', '/metrics']])
  })

  it('Kubernetes: the NetworkPolicy lets in the ingress controller (API port) and Prometheus (metrics port) only, and out the database, pooler, Redis and DNS only', () => {
    const [deployment] = k8s('deployment.yaml') as [K8sObject]
    const [server, migrate] = k8s('networkpolicy.yaml') as [K8sObject, K8sObject]
    interface Peer { namespaceSelector?: { matchLabels: Record<string, string> }, podSelector?: { matchLabels: Record<string, string> } }
    interface Rule { from?: Peer[], to?: Peer[], ports: Array<{ port: number | string, protocol: string }> }
    const who = (peers: Peer[] = []): string[] => peers.map(p => Object.values({ ...p.podSelector?.matchLabels }).join(','))
    assert.deepEqual(server.spec.podSelector.matchLabels, deployment.spec.selector.matchLabels)
    assert.deepEqual(server.spec.policyTypes, ['Ingress', 'Egress'])
    const ingress = server.spec.ingress as Rule[]
    assert.deepEqual(ingress.map(r => [who(r.from), r.ports.map(p => p.port)]), [[['ingress-nginx'], ['http']], [['prometheus'], ['metrics']]])
    // Every peer is named (an empty from/to would let anyone in or out).
    for (const r of ingress) for (const p of r.from!) assert.ok(p.namespaceSelector !== undefined && p.podSelector !== undefined)
    const egress = server.spec.egress as Rule[]
    assert.deepEqual(egress.map(r => [who(r.to), r.ports.map(p => `${p.port}/${p.protocol}`)]),
      [[['pgbouncer'], ['6432/TCP']], [['postgresql'], ['5432/TCP']], [['redis'], ['6379/TCP']], [['kube-dns'], ['53/UDP', '53/TCP']]])
    // The pooler port is the one the documented DATABASE_URL names.
    assert.match(read('docs/how-to/deploy.md'), /@pgbouncer:6432\//)
    const [job] = k8s('migrate-job.yaml') as [K8sObject]
    assert.deepEqual(migrate.spec.podSelector.matchLabels, { 'app.kubernetes.io/component': job.spec.template.metadata.labels['app.kubernetes.io/component'] })
    assert.deepEqual(migrate.spec.policyTypes, ['Ingress', 'Egress'])
    assert.equal(migrate.spec.ingress, undefined, 'nothing in')
    assert.deepEqual((migrate.spec.egress as Rule[]).map(r => who(r.to)), [['pgbouncer'], ['postgresql'], ['kube-dns']])
  })

  it('Kubernetes: kustomization.yaml lists every manifest but the CRD-dependent ones, sets the namespace, and the image every manifest names', () => {
    const kustomization = parse(read('deploy/kubernetes/kustomization.yaml')) as { kind: string, namespace: string, resources: string[], images: Array<{ name: string, newName: string, newTag: string }> }
    assert.equal(kustomization.kind, 'Kustomization')
    assert.deepEqual([...kustomization.resources].sort(), MANIFESTS.filter(f => !NEEDS_CRD.has(f)))
    assert.match(kustomization.namespace, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
    // No manifest sets a namespace of its own, which the kustomization's would silently replace.
    for (const file of MANIFESTS) for (const doc of k8s(file)) assert.equal((doc.metadata as { namespace?: string }).namespace, undefined, file)
    const images = new Set(MANIFESTS.flatMap(f => k8s(f)).flatMap(doc => (doc.spec?.template?.spec?.containers ?? []) as K8sContainer[]).map(c => c.image))
    assert.deepEqual([...images], [`petstore:${pkg.version}`])
    assert.deepEqual(kustomization.images.map(i => [i.name, i.newTag]), [['petstore', pkg.version]])
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
    assert.ok(Number(inter) * Number(fall) * 1000 <= config.shutdownDrainMs, 'the balancer takes a draining instance out before it stops accepting')
    const pgbouncer = read('deploy/compose/pgbouncer/pgbouncer.ini')
    assert.match(pgbouncer, /^pool_mode = transaction$/m)
    // The admin console and its read-only user, as docs/how-to/pgbouncer.md reaches them.
    assert.match(pgbouncer, /^admin_users = pgbouncer$/m)
    assert.match(pgbouncer, /^stats_users = pgbouncer_stats$/m)
    const start = read('deploy/compose/pgbouncer/start.sh')
    for (const user of ['pgbouncer', 'pgbouncer_stats']) assert.match(start, new RegExp(`'"${user}" "%s"\\\\n'`), `start.sh writes ${user}'s password`)
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
