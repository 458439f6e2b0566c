// The limit the service is measured against: a raw node:http server answering, from memory, the
// exact response bytes the service gave for each request (status, headers, body). It checks
// nothing; for a request with a body it reads the body first, as any server must.
// Usage: node bench/baseline.mjs PORT RESPONSES.json [fastify]
// With `fastify`, the same table is served by a bare Fastify app instead (the framework's floor).
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

const [port, file, framework] = process.argv.slice(2)
const table = new Map()
for (const r of JSON.parse(readFileSync(file, 'utf8'))) {
  table.set(`${r.method} ${r.url}`, { status: r.status, headers: r.headers, body: Buffer.from(r.body, 'base64') })
}
const notFound = { status: 404, headers: { 'content-type': 'text/plain' }, body: Buffer.from('not in the baseline table\n') }

function answer (req, res) {
  const r = table.get(`${req.method} ${req.url}`) ?? notFound
  res.writeHead(r.status, r.headers)
  res.end(r.body)
}

if (framework === 'fastify') {
  // The framework's own floor: Fastify with no plugin, hook, schema or logger, replaying the same
  // bytes from one catch-all route. What the service costs above this is our own per-request work.
  const { default: Fastify } = await import('fastify')
  const app = Fastify({ keepAliveTimeout: 72000 })
  app.all('*', (req, reply) => {
    const r = table.get(`${req.method} ${req.url}`) ?? notFound
    reply.code(r.status).headers(r.headers).send(r.body)
  })
  await app.listen({ port: Number(port), host: '127.0.0.1' })
  process.stdout.write('ready\n')
  process.on('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
} else {
  const server = createServer({ keepAliveTimeout: 72000 }, (req, res) => {
    if (req.method === 'GET' || req.method === 'HEAD') {
      answer(req, res)
      return
    }
    req.on('data', () => {})
    req.on('end', () => answer(req, res))
  })
  server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'))
  process.on('SIGTERM', () => server.close(() => process.exit(0)))
}
