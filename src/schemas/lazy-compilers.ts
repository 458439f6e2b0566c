import { createRequire } from 'node:module'
import type { FastifyServerOptions } from 'fastify'

type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>
type ValidatorFactory = NonNullable<Factories['buildValidator']>
type SerializerFactory = NonNullable<Factories['buildSerializer']>
type Serializer = ReturnType<ReturnType<SerializerFactory>>

// Fastify's own compilers, resolved from Fastify's installation (they are its dependencies, not ours).
const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'))

/**
 * Fastify's default compilers, changed in when they do their work, not in what they produce:
 * - the default request validator (@fastify/ajv-compiler, another Ajv) is loaded only if a route
 *   ever needs it; none does (the root's validator compiler, schemas/validator.ts set by
 *   registerSchemas, serves every route), yet Fastify would load it at construction;
 * - each response serializer (fast-json-stringify) is compiled on the first response it writes
 *   instead of for every route and status at start: most never write an error body in a process's
 *   life. Compiling is synchronous, so concurrent first requests cannot race; a schema it cannot
 *   compile fails that response (500), and the suite writes every documented response.
 * Both are work a start would otherwise do before its first answer. One difference remains for a
 * route outside /v1 with a headers schema, should one appear: with a compilers factory given,
 * Fastify treats the validator as custom and does not lower-case that schema's header names.
 */
export const lazyCompilers: Factories = {
  buildValidator: ((externalSchemas: unknown, options: unknown) => {
    const build = (fastifyRequire('@fastify/ajv-compiler') as () => (externalSchemas: unknown, options: unknown) => unknown)()
    return build(externalSchemas, options)
  }) as ValidatorFactory,
  buildSerializer: (externalSchemas, options) => {
    // The compiler itself (fast-json-stringify, with an Ajv of its own) is loaded by the first
    // response that needs it too: /healthz and /readyz send fixed bytes (routes/health.ts).
    let build: ReturnType<SerializerFactory> | undefined
    return (route) => {
      let serialize: Serializer | undefined
      return (data: unknown) => {
        build ??= (fastifyRequire('@fastify/fast-json-stringify-compiler') as () => SerializerFactory)()(externalSchemas, options)
        return (serialize ??= build(route))(data)
      }
    }
  }
}
