// The limit the realistic mix (bench/mix.mjs) is measured against: a raw node:http server doing the
// same operations on an in-memory Map, with no authentication, no durability and no logs. It holds
// PETS pets shaped as the bench stores are; getPet and listPets (limit, status, cursor = the last id
// of the previous page) serialize with JSON.stringify; createPet parses the body and appends.
// Usage: node bench/mix-limit.mjs PORT PETS
import { createServer } from 'node:http'

const [port, count] = process.argv.slice(2).map(Number)
const STATUSES = ['available', 'pending', 'sold']
const pets = new Map()
/** Ids in ascending order: all of them, and one list per status. */
const all = []
const byStatus = { available: [], pending: [], sold: [] }
let nextId = 1

function add (name, categoryId, status) {
  const pet = { id: nextId++, name, categoryId, status }
  pets.set(pet.id, pet)
  all.push(pet.id)
  byStatus[status].push(pet.id)
  return pet
}
for (let x = 1; x <= count; x++) add(`pet-${x}`, x % 97, STATUSES[x % 3])

/** Index of the first id greater than `after` in the ascending list `ids`. */
function firstAfter (ids, after) {
  let lo = 0; let hi = ids.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (ids[mid] <= after) lo = mid + 1; else hi = mid
  }
  return lo
}

function send (res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers })
  res.end(body)
}

const server = createServer({ keepAliveTimeout: 72000 }, (req, res) => {
  const q = req.url.indexOf('?')
  const path = q === -1 ? req.url : req.url.slice(0, q)
  if (req.method === 'POST' && path === '/v1/pets') {
    const chunks = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const b = JSON.parse(Buffer.concat(chunks).toString())
      const pet = add(b.name, b.categoryId, b.status ?? 'available')
      send(res, 201, JSON.stringify(pet), { location: `/v1/pets/${pet.id}` })
    })
    return
  }
  if (path === '/v1/pets') {
    const params = new URLSearchParams(q === -1 ? '' : req.url.slice(q + 1))
    const limit = Number(params.get('limit') ?? 20)
    const status = params.get('status') ?? undefined
    const ids = status === undefined ? all : byStatus[status]
    const start = params.has('cursor') ? firstAfter(ids, Number(params.get('cursor'))) : 0
    const page = ids.slice(start, start + limit).map(id => pets.get(id))
    const headers = start + limit < ids.length ? { link: `</v1/pets?limit=${limit}${status === undefined ? '' : `&status=${status}`}&cursor=${page[page.length - 1].id}>; rel="next"` } : {}
    send(res, 200, JSON.stringify(page), headers)
    return
  }
  const pet = pets.get(Number(path.slice('/v1/pets/'.length)))
  if (pet === undefined) send(res, 404, '{"code":"not_found","message":"no pet with this id"}')
  else send(res, 200, JSON.stringify(pet))
})
server.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
