import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { CachedKeys } from './plugins/auth.js'
import { hasBody } from './plugins/before-body.js'
import { ifNoneMatchHits } from './plugins/etag.js'
import { edgeProblem } from './plugins/hardening.js'
import type { Metrics } from './plugins/metrics.js'
import type { RateLimits } from './plugins/rate-limit.js'
import { requestIdOf } from './plugins/request-id.js'
import type { PetReadsLane } from './routes/pets.js'
import { LIMIT_DEFAULT, LIMIT_MAX, LIMIT_MIN, PET_STATUSES, type PetStatus } from './schemas/pets.js'
import { DECIMAL_INTEGER } from './schemas/validator.js'
import type { Representation } from './services/pet-reads.js'

/*
 * The fast lane: cached reads answered ahead of Fastify, with the same answer.
 *
 * Nearly every read is a getPet or listPets the read cache already holds, by a key the key cache
 * already trusts, counted in memory. Fastify's request handling (routing, the Request and Reply
 * objects, the hook runner, validation, the reply's header and send machinery) then costs more CPU
 * than everything the service itself does for the request (docs/performance.md, "The fast lane").
 * The lane is the first listener of the node:http server (laneServer, installed through Fastify's
 * documented `serverFactory` option). For each request it first decides, without any side effect,
 * whether the request is one it answers exactly as the Fastify path would:
 * - GET (not HEAD) of `/v1/pets/<id>` or `/v1/pets` with a query it reads into exactly the values
 *   validation would give (limit, status, cursor; any other, repeated, empty or encoded parameter,
 *   and any other path spelling, is left to Fastify);
 * - none of the headers whose handling it does not do itself: a body (Content-Length > 0 or
 *   Transfer-Encoding), Expect, If-Match, Accept-Version; and no edge problem (hardening.ts);
 * - not draining or closing (shutdown.ts), not shedding load (overload.ts);
 * - a bearer key the key cache trusts as valid now (auth.ts), limits counted in memory, no address
 *   block in force (one blocked address keeps the lane off for all until its block ends), and this
 *   request not over the key's limit (rate-limit.ts);
 * - getPet before its sunset, and the representation in the read cache (routes/pets.ts).
 * Anything else returns false before anything happened, and Fastify handles the request as always.
 * When it answers, it does what that path does, with the same functions: the use of the key
 * recorded, the request counted against the key (RateLimit headers), getPet's call counted, the
 * cache hit counted, the request id taken from X-Request-Id by the same rule, If-None-Match → 304,
 * the same headers in the same order, and on `finish` the same metrics and access line
 * (observability.ts). Every answer it gives is also counted in petstore_fast_lane_responses_total.
 * CORS is not among what it does: with CORS_ORIGINS set the lane is not installed (app.ts), nor
 * with HOST=localhost (Fastify binds each address of that name only with a server it made).
 * test/server/fast-lane.test.ts sends the same requests to a server with the lane and one without
 * and compares status, headers, bodies, log lines and metrics.
 */

/** The parts of the app the lane uses, all of them the plugins' own functions. */
interface Parts {
  app: FastifyInstance
  keys: CachedKeys
  limits: RateLimits
  metrics: Metrics
  reads: PetReadsLane
}

const GET_PET = '/v1/pets/:petId'
const LIST_PETS = '/v1/pets'
const PET_PREFIX = '/v1/pets/'
/** A pet id the lane reads itself: a positive int64 in the one integer grammar, at most 18 digits. */
const PET_ID = /^[1-9][0-9]{0,17}$/
/** A cursor whose spelling no query decoding changes (the codec decides whether it is one). */
const CURSOR = /^[A-Za-z0-9_-]+$/

interface ListQuery { limit: number, status: PetStatus | undefined, cursor: string | undefined }

/**
 * The values listPets' validation gives for this query string, when they are certain: undefined
 * for anything the lane does not read exactly as Fastify's parser and the schema would (Fastify
 * then answers, 200 or 400).
 */
function listQuery (qs: string | undefined): ListQuery | undefined {
  const q: ListQuery = { limit: LIMIT_DEFAULT, status: undefined, cursor: undefined }
  if (qs === undefined) return q
  let limit: string | undefined
  for (const part of qs.split('&')) {
    const eq = part.indexOf('=')
    if (eq <= 0) return undefined
    const name = part.slice(0, eq)
    const value = part.slice(eq + 1)
    if (name === 'limit' && limit === undefined) {
      limit = value
    } else if (name === 'status' && q.status === undefined) {
      if (!(PET_STATUSES as readonly string[]).includes(value)) return undefined
      q.status = value as PetStatus
    } else if (name === 'cursor' && q.cursor === undefined) {
      if (!CURSOR.test(value)) return undefined
      q.cursor = value
    } else {
      return undefined
    }
  }
  if (limit !== undefined) {
    if (!DECIMAL_INTEGER.test(limit)) return undefined
    q.limit = Number(limit)
    if (q.limit < LIMIT_MIN || q.limit > LIMIT_MAX) return undefined
  }
  return q
}

export class FastLane {
  private reads: PetReadsLane | undefined
  private parts: Parts | undefined

  /** The pet routes hand over their cached reads (routes/pets.ts). */
  serveReads (reads: PetReadsLane): void {
    this.reads = reads
  }

  /** Starts answering, once the app is built (its plugins' decorations exist). */
  open (app: FastifyInstance): void {
    if (this.reads === undefined) throw new Error('fast lane: the pet routes did not register their reads')
    this.parts = { app, keys: app.cachedKeys, limits: app.rateLimits, metrics: app.metrics, reads: this.reads }
  }

  /** Answers the request and returns true, or returns false having done nothing (Fastify answers). */
  answer (req: IncomingMessage, res: ServerResponse): boolean {
    const p = this.parts
    if (p === undefined || req.method !== 'GET') return false
    const url = req.url ?? ''
    const h = req.headers
    let petId: bigint | undefined
    let list: ListQuery | undefined
    if (url.startsWith(PET_PREFIX)) {
      const id = url.slice(PET_PREFIX.length)
      if (!PET_ID.test(id)) return false
      petId = BigInt(id)
    } else if (url === LIST_PETS) {
      list = listQuery(undefined)
    } else if (url.startsWith(LIST_PETS + '?')) {
      list = listQuery(url.slice(LIST_PETS.length + 1))
      if (list === undefined) return false
    } else {
      return false
    }
    if (h.expect !== undefined || h['if-match'] !== undefined || h['accept-version'] !== undefined || hasBody(req)) return false
    if (edgeProblem(req) !== undefined || p.app.draining || p.app.overloaded()) return false
    const now = Date.now()
    const keyId = p.keys.idOf(h.authorization, now)
    if (keyId === undefined || !p.limits.fastCountable(keyId, now)) return false
    const rep: Representation | undefined = petId !== undefined ? p.reads.pet(petId) : p.reads.page(list!.limit, list!.status, list!.cursor)
    if (rep === undefined) return false

    // From here on the lane answers: the same steps, in the same order, as the Fastify path.
    const start = performance.now()
    const reqId = requestIdOf(h['x-request-id'])
    p.keys.used(keyId, now)
    const inm = h['if-none-match']
    const notModified = inm !== undefined && ifNoneMatchHits(inm, rep.etag)
    const headers: Record<string, string> = { 'x-request-id': reqId, 'x-content-type-options': 'nosniff', 'cache-control': 'private, no-cache' }
    p.limits.countFast(keyId, now, headers)
    if (petId !== undefined) p.reads.sendPet(rep, keyId, headers, notModified)
    else p.reads.sendPage(rep, headers, notModified)
    p.metrics.fastLane.inc()
    const status = notModified ? 304 : 200
    const route = petId !== undefined ? GET_PET : LIST_PETS
    res.on('finish', () => { p.app.recordResponse(reqId, keyId, 'GET', route, url, status, performance.now() - start) })
    if (notModified) {
      res.writeHead(304, headers)
      res.end()
    } else {
      headers['content-length'] = String(rep.body.byteLength)
      res.writeHead(200, headers)
      res.end(rep.body)
    }
    return true
  }
}

/** What of Fastify's options the lane's server is made with (Fastify sets these itself without a serverFactory). */
interface ServerFactoryOptions { http?: ServerOptions, keepAliveTimeout: number, requestTimeout: number, connectionTimeout: number }

/**
 * Fastify's `serverFactory`: the node:http server Fastify would make (the same options: app.ts's
 * `http`, keep-alive, request and connection timeouts), with the lane in front of Fastify's handler.
 */
export function laneServer (lane: FastLane): (handler: (req: IncomingMessage, res: ServerResponse) => void, opts: Record<string, unknown>) => Server {
  return (handler, opts) => {
    const o = opts as unknown as ServerFactoryOptions
    const server = createServer(o.http ?? {}, (req, res) => {
      let answered: boolean
      try {
        answered = lane.answer(req, res)
      } catch (err) {
        // Insurance (no known input throws): a request the lane failed on goes to Fastify, unless an
        // answer has begun, which only a broken connection can end.
        if (res.headersSent) {
          res.destroy(err as Error)
          return
        }
        answered = false
      }
      if (!answered) handler(req, res)
    })
    server.keepAliveTimeout = o.keepAliveTimeout
    server.requestTimeout = o.requestTimeout
    server.setTimeout(o.connectionTimeout)
    return server
  }
}
