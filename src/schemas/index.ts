import { createRequire } from 'node:module'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type SerializerSelector from '@fastify/fast-json-stringify-compiler'
import { ErrorSchema } from './common.js'
import { NewPetSchema, PetSchema } from './pets.js'
import { createValidatorCompiler } from './validator.js'

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>

/** The named schemas, referred to by routes through `Ref` and emitted as components/schemas under their $id. */
export const SHARED_SCHEMAS = [ErrorSchema, PetSchema, NewPetSchema] as const

const validatorCompiler = () => createValidatorCompiler(SHARED_SCHEMAS)

/** Adds the named schemas to Fastify and sets the one validator compiler of every route (schemas/validator.ts). */
export function registerSchemas (app: FastifyInstance): void {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
  app.setValidatorCompiler(validatorCompiler())
}

/**
 * Fastify's `schemaController.compilersFactory`. Validation: ours (schemas/validator.ts), also for a
 * route outside registerSchemas's scope, so Fastify never loads its default Ajv. Serialization:
 * Fastify's own compiler (@fastify/fast-json-stringify-compiler, as it ships), run when a route and
 * status first answer rather than for every route and status at start, and loaded with that first
 * answer. Eager compiling multiplied a start's CPU time to the first /healthz 200 by 2.5 (A/B of the
 * two builds, alternated rounds: 530 against 1,340 ms median).
 */
export const compilersFactory: CompilersFactory = {
  // Fastify types this factory as @fastify/ajv-compiler's; any FastifySchemaCompiler is what it returns.
  buildValidator: validatorCompiler as unknown as CompilersFactory['buildValidator'],
  buildSerializer: (externalSchemas, options) => {
    let build: SerializerSelector.SerializerCompiler | undefined
    return (route) => {
      let serialize: SerializerSelector.Serializer | undefined
      return (data: unknown) => {
        build ??= (createRequire(import.meta.url)('@fastify/fast-json-stringify-compiler') as typeof SerializerSelector)()(externalSchemas, options)
        return (serialize ??= build(route as SerializerSelector.RouteDefinition))(data)
      }
    }
  }
}
