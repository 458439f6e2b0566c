import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http'
import type { FastifyInstance, FastifySchemaCompiler, RouteOptions } from 'fastify'
import FindMyWay from 'find-my-way'
import { hasBody } from './plugins/before-body.js'
import { edgeProblem, NOSNIFF } from './plugins/hardening.js'
import { requestIdOf } from './plugins/request-id.js'
import type { ReplySink } from './reply-sink.js'
import type { Representation } from './services/pet-reads.js'
import type { Scope } from './schemas/scopes.js'

/*
 * The fast lane: reads answered at once, ahead of Fastify, by the routes' own functions.
 *
 * Nearly every read is a getPet or listPets that the read cache holds, or that the store reads (on
 * SQLite synchronously, in a few µs), by a key the key cache trusts, counted in memory. Fastify's request handling (routing, the Request and Reply objects,
 * the hook runner, the reply's header and send machinery) then costs more CPU than the service's
 * own work for the request. The lane is the first listener of the node:http server (laneServer,
 * installed through Fastify's `serverFactory` option). It answers a request only when every step
 * would let it through at once, decided first with no side effect; anything else goes to Fastify
 * untouched. A read from a store that reads asynchronously (a PostgreSQL miss) is waited for, the
 * request then admitted again and answered, or, when the pet is not found or the store failed,
 * handed to Fastify as it came. Nothing it does is its own:
 * - routing: find-my-way, the router Fastify uses, with Fastify's options and every GET route;
 * - the path and query: the route's own schemas, through the app's validator compiler;
 * - the arrival checks: the hardening plugin's edge check, no drain, no shedding, no body, no
 *   Expect, If-Match or Accept-Version (Fastify's to answer);
 * - authentication, the route's scope and limits: the policy's admission (auth.ts), the first step
 *   of its own hook (a key without the scope is left to the policy, which answers 403);
 * - the answer: the route's CachedRead (its `config.cachedRead`), made of the route's own hooks and
 *   the answer function its handler sends (routes/pets.ts);
 * - the record: the observability plugin's, with the request logger Fastify would have made.
 * test/server/fast-lane.test.ts sends the same requests to an app with the lane and one without and
 * compares status, headers, bodies, log lines and metrics.
 */

/**
 * A read a route can answer at once, from the read cache or from a store that reads synchronously,
 * declared in its `config.cachedRead`: the fast lane answers such a route's requests whenever
 * lookup() finds the representation.
 */
export interface CachedRead<P = unknown, Q = unknown> {
  /**
   * The representation the request reads: at once (a hit, or any read of a store that reads
   * synchronously), its hit or miss counted, or as a Promise (a miss on a store that reads
   * asynchronously), its miss counted by missed() once the lane answers with it; undefined, at once or as the Promise's value, with nothing counted, when the
   * route must answer it (no such pet, a cursor refused, past the sunset). A Promise that rejects
   * (the store cannot read) leaves the request to the route too. `params` and `query` as
   * validation gave them.
   */
  lookup (params: P, query: Q): Representation | undefined | Promise<Representation | undefined>
  /** Counts the cache miss of a representation lookup() gave as a Promise, when the lane answers with it. */
  missed (): void
  /**
   * The rest of what the route does for a request lookup() found, after authentication: its hooks'
   * counts, and its answer set on `reply` (status, headers) and returned (the body; none for a 304).
   */
  answer (headers: IncomingHttpHeaders, keyId: number, reply: ReplySink, rep: Representation): string | undefined
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on a route whose reads the fast lane may answer (fast-lane.ts). */
    cachedRead?: CachedRead
  }
}

/** What the lane uses of the app: the plugins' own functions, the ones their hooks call. */
type Plugins = Pick<FastifyInstance, 'admission' | 'recordResponse' | 'draining' | 'overloaded' | 'metrics' | 'log' | 'childLoggerFactory'>

type Validate = (data: unknown) => { value?: unknown, error?: unknown }

/**
 * A GET route as the lane's router holds it: its options as Fastify has them (url, schema, config,
 * as every onRoute hook left them), and for a cached read its validators, made when the lane opens.
 */
interface Route {
  opts: RouteOptions
  /** The scope a key needs for it (config.scope), asked by the admission of a key that does not hold every scope. */
  scope: () => Scope | undefined
  read?: CachedRead
  params?: Validate
  query?: Validate
  headers?: Validate
}

/** Fastify's router options (app.ts), so the lane's router matches every URL as Fastify's does. */
export const ROUTER_OPTIONS = { ignoreTrailingSlash: false, maxParamLength: 16384 } as const

const PASS: Validate = (data) => ({ value: data })

/** The answer the lane writes: what the plugins and the route set, then sent as it is. */
class LaneReply implements ReplySink {
  status = 200
  readonly headers: Record<string, string>

  constructor (reqId: string) {
    // What the arrival checks set first: the request id (request-id.ts) and nosniff (hardening.ts).
    this.headers = { 'x-request-id': reqId, 'x-content-type-options': NOSNIFF }
  }

  code (status: number): this {
    this.status = status
    return this
  }

  header (name: string, value: string): this {
    this.headers[name] = value
    return this
  }
}

export class FastLane {
  private readonly router = FindMyWay(ROUTER_OPTIONS)
  private readonly routes: Route[] = []
  private plugins: Plugins | undefined

  /** Fastify's onRoute hook: every GET route goes into the lane's router, so it matches as Fastify's does. */
  readonly onRoute = (route: RouteOptions): void => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!methods.includes('GET')) return
    const r: Route = { opts: route, scope: () => route.config?.scope }
    this.routes.push(r)
    this.router.on('GET', route.url, () => {}, r)
  }

  /** Starts answering, once the app is built: the cached reads' validators compiled by the app's own compiler. */
  open (app: FastifyInstance): void {
    const compile = app.validatorCompiler as FastifySchemaCompiler<unknown> | undefined
    if (compile === undefined) throw new Error('fast lane: the app has no validator compiler')
    for (const r of this.routes) {
      const { url, schema, config } = r.opts
      if (config?.cachedRead === undefined) continue
      const part = (s: unknown, httpPart: string): Validate =>
        s === undefined ? PASS : compile({ schema: s, method: 'GET', url, httpPart }) as Validate
      r.params = part(schema?.params, 'params')
      r.query = part(schema?.querystring, 'querystring')
      r.headers = part(schema?.headers, 'headers')
      r.read = config.cachedRead
    }
    this.plugins = app
  }

  /**
   * Answers the request and returns true, or returns false having done nothing (Fastify answers).
   * A read that takes a Promise (a miss on a store that reads asynchronously) returns true at once
   * and answers when it settles, or then hands the request to `fastify`.
   */
  answer (req: IncomingMessage, res: ServerResponse, fastify: (req: IncomingMessage, res: ServerResponse) => void): boolean {
    const p = this.plugins
    if (p === undefined || req.method !== 'GET') return false
    const url = req.url ?? ''
    const found = this.router.find('GET', url)
    const route = found?.store as Route | undefined
    const read = route?.read
    if (read === undefined) return false
    const h = req.headers
    if (h.expect !== undefined || h['if-match'] !== undefined || h['accept-version'] !== undefined || hasBody(req)) return false
    if (edgeProblem(req) !== undefined || p.draining || p.overloaded()) return false
    const params = route!.params!(found!.params)
    const query = route!.query!(found!.searchParams)
    if (params.error !== undefined || query.error !== undefined || route!.headers!(h).error !== undefined) return false
    const now = Date.now()
    const keyId = p.admission.admit(h.authorization, now, route!.scope)
    if (keyId === undefined) return false
    const start = performance.now()
    const rep = read.lookup(params.value, query.value)
    if (rep === undefined) return false
    if (!(rep instanceof Promise)) {
      this.respond(req, res, route!, keyId, now, rep, start)
      return true
    }
    // Fastify gets the request as it came (its own arrival checks run then), at most once.
    let handed = false
    const toFastify = (): void => {
      if (handed) return
      handed = true
      fastify(req, res)
    }
    rep.then((later) => {
      // Admitted again now that the read is back: a drain may have begun, or the key's limit been
      // reached, meanwhile (the arrival's overload check, like Fastify's, is not repeated).
      const at = Date.now()
      const key = later === undefined || p.draining ? undefined : p.admission.admit(h.authorization, at, route!.scope)
      if (key === undefined) {
        toFastify()
        return
      }
      read.missed()
      this.respond(req, res, route!, key, at, later!, start)
    }, toFastify).catch((err: unknown) => {
      // The answer failed part way (a broken connection): nothing more can be sent on it.
      if (res.headersSent || handed) res.destroy(err as Error)
      else toFastify()
    })
    return true
  }

  /** The lane's answer, with the same steps, in the same order, as Fastify's path. */
  private respond (req: IncomingMessage, res: ServerResponse, route: Route, keyId: number, now: number, rep: Representation, start: number): void {
    const p = this.plugins!
    const h = req.headers
    const reqId = requestIdOf(h['x-request-id'])
    const reply = new LaneReply(reqId)
    p.admission.enter(keyId, now, reply)
    const body = route.read!.answer(h, keyId, reply, rep)
    p.metrics.fastLane.inc()
    // Fastify's own request logger for the request, bound to its id under Fastify's label.
    const log = p.childLoggerFactory.call(p as FastifyInstance, p.log, { reqId }, {}, req)
    const routeUrl = route.opts.url
    const url = req.url ?? ''
    res.on('finish', () => { p.recordResponse(log, keyId, 'GET', routeUrl, url, reply.status, performance.now() - start) })
    if (body === undefined) {
      res.writeHead(reply.status, reply.headers)
      res.end()
    } else {
      reply.headers['content-length'] = String(rep.bytes)
      res.writeHead(reply.status, reply.headers)
      res.end(body)
    }
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
        answered = lane.answer(req, res, handler)
      } catch (err) {
        // A request the lane failed on (a store that cannot read now: Fastify's path reads again and
        // answers 503) goes to Fastify, unless an answer has begun, which only a broken connection can end.
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
