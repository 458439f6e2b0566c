import assert from 'node:assert/strict'
import { request, Agent } from 'node:http'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { tempDir } from '../helpers/app.js'
import { runCli, startServer } from '../helpers/process.js'
import { onCleanup } from '../helpers/cleanup.js'

const WRITERS = 8
const KILL_AFTER_ACKS = 300

function post (agent: Agent, url: string, key: string, body: string): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/pets`, {
      method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    }, (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (s: string) => { text += s }).on('end', () => resolve({ status: res.statusCode!, body: text })).on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

describe('durability under kill -9 (black box)', () => {
  it('keeps every acknowledged pet, once, after a SIGKILL under concurrent write load', async (t) => {
    const path = join(tempDir(t), 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${path}` }
    const key = (await runCli(['keys', 'create', '--name', 'load', '--create'], env)).stdout.trim()
    const server = await startServer(t, env)

    const acked = new Map<string, number>() // name → id, only for 201 answers
    let killed = false
    const agent = new Agent({ keepAlive: true, maxSockets: WRITERS })
    onCleanup(t, () => agent.destroy())

    const writer = async (w: number) => {
      for (let n = 0; ; n++) {
        const name = `w${w}-${n}`
        let res
        try {
          res = await post(agent, server.url, key, JSON.stringify({ name, categoryId: w * 1_000_000 + n }))
        } catch {
          return // the server is gone: this request was never acknowledged
        }
        assert.equal(res.status, 201, res.body)
        const pet = JSON.parse(res.body) as { id: number, name: string }
        assert.equal(pet.name, name)
        acked.set(name, pet.id)
        if (!killed && acked.size >= KILL_AFTER_ACKS) {
          killed = true
          server.child.kill('SIGKILL')
        }
      }
    }
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)))
    const { signal } = await server.exited
    assert.equal(signal, 'SIGKILL')
    assert.ok(acked.size >= KILL_AFTER_ACKS)

    // Restart on the same file and read everything back through the API.
    const again = await startServer(t, env)
    const listed: Array<{ id: number, name: string }> = []
    let url: string | undefined = '/v1/pets?limit=100'
    while (url !== undefined) {
      const res: Response = await fetch(`${again.url}${url}`, { headers: { authorization: `Bearer ${key}` } })
      assert.equal(res.status, 200)
      listed.push(...await res.json() as Array<{ id: number, name: string }>)
      url = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1]
    }
    const byName = new Map(listed.map(p => [p.name, p.id]))
    assert.equal(byName.size, listed.length, 'a pet is stored twice')
    assert.equal(new Set(listed.map(p => p.id)).size, listed.length, 'an id is used twice')
    for (const [name, id] of acked) assert.equal(byName.get(name), id, `acknowledged pet ${name} (id ${id}) is missing after the crash`)
    // At most the requests in flight at the kill may have committed without an answer.
    assert.ok(listed.length - acked.size <= WRITERS, `${listed.length - acked.size} unacknowledged pets stored`)

    again.child.kill('SIGTERM')
    await again.exited
    const db = new Database(path, { readonly: true })
    onCleanup(t, () => db.close())
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
  })
})
