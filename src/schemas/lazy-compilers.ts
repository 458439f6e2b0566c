import { createRequire } from 'node:module'
import type { FastifyServerOptions } from 'fastify'

type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>
type ValidatorFactory = NonNullable<Factories['buildValidator']>
type SerializerFactory = NonNullable<Factories['buildSerializer']>
type Serializer = ReturnType<ReturnType<SerializerFactory>>

// Fastify's own compilers, resolved from Fastify's installation (they are its dependencies, not ours).
const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'))

/**
 * Fastify's default compilers, changed in when they work, not in what they produce: the default
 * validator is loaded only if a route needs it (none does: schemas/validator.ts serves them all), and
 * each response serializer is compiled on the first response it writes, not for every route and
 * status at start. With a compilers factory Fastify treats the validator as custom, so a headers
 * schema outside /v1 would keep its names' case.
 */
export const lazyCompilers: Factories = {
  buildValidator: ((externalSchemas: unknown, options: unknown) => {
    const build = (fastifyRequire('@fastify/ajv-compiler') as () => (externalSchemas: unknown, options: unknown) => unknown)()
    return build(externalSchemas, options)
  }) as ValidatorFactory,
  buildSerializer: (externalSchemas, options) => {
    // fast-json-stringify itself is loaded by the first response that needs it.
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
