import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'

/**
 * One step a request meets: sets what it must on the reply and returns, throws the Error (an
 * ApiError) that answers the request instead, or answers it itself (reply.send) and returns true,
 * which ends the request's steps and hooks. Synchronous by design: see requestChecks.
 */
export type RequestCheck = (request: FastifyRequest, reply: FastifyReply) => boolean | undefined | void

/** The names of the steps of each stage, in the order a request meets them (app.ts lists them). */
export interface RequestSteps {
  /** On arrival: the first onRequest pass of every request, before CORS. */
  onArrival: readonly string[]
  /** On admission: the second onRequest pass (admissionChecks), after CORS, so its refusals carry CORS's headers. */
  onAdmission: readonly string[]
  /** Before the body: the one preParsing pass (after the onRequest hooks of the scope the URL addresses, authentication included). */
  beforeBody: readonly string[]
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Sets the check of the named step of either onRequest pass, on arrival or on admission (a name app.ts lists). */
    checkOnArrival: (step: string, check: RequestCheck) => void
    /** Sets the check of the named step of the preParsing pass (a name app.ts lists). */
    checkBeforeBody: (step: string, check: RequestCheck) => void
    /** Runs both onRequest passes' steps for a request that meets no hook (a URL the router refused); throws as a step does, true when a step answered. */
    arrive: (request: FastifyRequest, reply: FastifyReply) => boolean
    /** Runs the on-admission steps: admissionChecks's hook. */
    admit: (request: FastifyRequest, reply: FastifyReply) => boolean
  }
}

/** A stage's steps: each check in its named slot, run in the listed order; a step left unset is skipped. */
function stage (stageName: string, names: readonly string[]): { set: (step: string, check: RequestCheck) => void, run: (request: FastifyRequest, reply: FastifyReply) => boolean } {
  const slots: Array<RequestCheck | undefined> = names.map(() => undefined)
  let checks: RequestCheck[] = []
  return {
    set: (step, check) => {
      const i = names.indexOf(step)
      if (i === -1) throw new Error(`request step '${step}' is not in the ${stageName} steps listed in app.ts (${names.join(', ')})`)
      if (slots[i] !== undefined) throw new Error(`request step '${step}' is set twice`)
      slots[i] = check
      checks = slots.filter(c => c !== undefined)
    },
    run: (request, reply) => {
      for (let i = 0; i < checks.length; i++) if (checks[i]!(request, reply) === true) return true
      return false
    }
  }
}

/** Runs a stage's steps: the error a step threw, true when a step answered (which ends the request: a hook that replies does not call done), else false. */
function runStage (run: (request: FastifyRequest, reply: FastifyReply) => boolean, request: FastifyRequest, reply: FastifyReply): Error | boolean {
  try {
    return run(request, reply)
  } catch (err) {
    return err as Error
  }
}

/** An onRequest hook running a stage's steps. */
function onRequestHook (run: (request: FastifyRequest, reply: FastifyReply) => boolean): onRequestHookHandler {
  return (request, reply, done) => {
    const outcome = runStage(run, request, reply)
    if (typeof outcome !== 'boolean') done(outcome)
    else if (!outcome) done()
  }
}

/**
 * The per-request steps of several plugins, run as one synchronous hook per stage instead of one
 * hook each: each plugin still owns its concern (its file, its set-up and clean-up) and sets the
 * check of its named step here; the order is app.ts's list, whatever order the plugins register
 * in. One hook costs one call through Fastify's hook runner; a chain of them costs one per check
 * (and an `async` hook a promise and a microtask tick more), on every request.
 * Registered first, so its hooks are in every scope, and checks set later still run. The on-admission
 * pass is a hook of its own (admissionChecks), registered after CORS's.
 */
async function requestChecks (app: FastifyInstance, steps: RequestSteps): Promise<void> {
  const onArrival = stage('onArrival', steps.onArrival)
  const onAdmission = stage('onAdmission', steps.onAdmission)
  const beforeBody = stage('beforeBody', steps.beforeBody)
  app.decorate('checkOnArrival', (step: string, check: RequestCheck) => { (steps.onArrival.includes(step) ? onArrival : onAdmission).set(step, check) })
  app.decorate('checkBeforeBody', beforeBody.set)
  app.decorate('arrive', (request: FastifyRequest, reply: FastifyReply) => onArrival.run(request, reply) || onAdmission.run(request, reply))
  app.decorate('admit', onAdmission.run)
  app.addHook('onRequest', onRequestHook(onArrival.run))
  app.addHook('preParsing', (request, reply, payload, done) => {
    const outcome = runStage(beforeBody.run, request, reply)
    if (typeof outcome !== 'boolean') done(outcome)
    else if (!outcome) done(null, payload)
  })
}

export default fp(requestChecks, { name: 'petstore-request-checks' })

/** The on-admission pass: registered after CORS, so its refusals (503 closing, opening, overloaded) carry CORS's headers. */
export const admissionChecks = fp((app: FastifyInstance, _opts, done) => {
  app.addHook('onRequest', onRequestHook(app.admit))
  done()
}, { name: 'petstore-admission-checks', dependencies: ['petstore-request-checks'] })
