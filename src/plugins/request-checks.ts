import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/**
 * One check a request meets: sets what it must on the reply and returns, or throws the Error (an
 * ApiError) that answers the request instead. Synchronous by design: see requestChecks.
 */
export type RequestCheck = (request: FastifyRequest, reply: FastifyReply) => void

declare module 'fastify' {
  interface FastifyInstance {
    /** Adds a check to the one onRequest pass of every request; checks run in the order added. */
    checkOnArrival: (check: RequestCheck) => void
    /**
     * Adds a check to the one preParsing pass of every request (after the onRequest hooks of the
     * scope the URL addresses, authentication included, before a byte of the body is read).
     */
    checkBeforeBody: (check: RequestCheck) => void
  }
}

/**
 * The checks of several plugins, run as one synchronous hook per stage instead of one hook each:
 * each plugin still owns its concern (its file, its set-up and clean-up) and adds its check here,
 * in the order app.ts registers the plugins, which is the order a request meets them. One hook
 * costs one call through Fastify's hook runner; a chain of them costs one per check (and an
 * `async` hook a promise and a microtask tick more), on every request.
 * Registered first, so its two hooks are in every scope, and checks added later still run.
 */
async function requestChecks (app: FastifyInstance): Promise<void> {
  const onArrival: RequestCheck[] = []
  const beforeBody: RequestCheck[] = []
  app.decorate('checkOnArrival', (check: RequestCheck) => { onArrival.push(check) })
  app.decorate('checkBeforeBody', (check: RequestCheck) => { beforeBody.push(check) })
  app.addHook('onRequest', (request, reply, done) => {
    try {
      for (let i = 0; i < onArrival.length; i++) onArrival[i]!(request, reply)
    } catch (err) {
      done(err as Error)
      return
    }
    done()
  })
  app.addHook('preParsing', (request, reply, payload, done) => {
    try {
      for (let i = 0; i < beforeBody.length; i++) beforeBody[i]!(request, reply)
    } catch (err) {
      done(err as Error)
      return
    }
    done(null, payload)
  })
}

export default fp(requestChecks, { name: 'petstore-request-checks' })
