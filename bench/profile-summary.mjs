import { readFileSync } from 'node:fs'
const prof = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const byId = new Map(prof.nodes.map(n => [n.id, n]))
const self = new Map()
const dt = new Map()
for (let i = 0; i < prof.samples.length; i++) dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0))
let total = 0
for (const [, t] of dt) total += t
const parent = new Map()
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const key = n => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/.*node_modules\//, 'nm:').replace(/.*wt-perf\//, '')}:${n.callFrame.lineNumber}`
for (const [id, t] of dt) { const k = key(byId.get(id)); self.set(k, (self.get(k) ?? 0) + t) }
const pkg = new Map()
for (const [id, t] of dt) { const u = byId.get(id).callFrame.url; const m = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(u); const k = m ? m[1] : u.includes('/dist/') ? 'dist:' + u.replace(/.*dist\//, '') : (u || byId.get(id).callFrame.functionName); pkg.set(k, (pkg.get(k) ?? 0) + t) }
// inclusive
const incl = new Map()
for (const [id, t] of dt) { const seen = new Set(); let c = id; while (c !== undefined) { const k = key(byId.get(c)); if (!seen.has(k)) { seen.add(k); incl.set(k, (incl.get(k) ?? 0) + t) } c = parent.get(c) } }
const show = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).forEach(([k, t]) => console.log((100 * t / total).toFixed(1).padStart(5) + '%  ' + k))
console.log('== self by package'); show(pkg, 25)
console.log('== self by function'); show(self, 40)
if (process.argv[3]) { console.log('== inclusive'); show(incl, Number(process.argv[3])) }
