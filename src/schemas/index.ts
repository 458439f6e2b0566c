import type { FastifyInstance } from 'fastify'
import { ErrorSchema } from './common.js'
import { NewPetSchema, PetSchema } from './pets.js'

/** The named schemas, referred to by routes through `Ref` and emitted as components/schemas under their $id. */
export const SHARED_SCHEMAS = [ErrorSchema, PetSchema, NewPetSchema] as const

/** Adds the named schemas to Fastify (for the serializers and the OpenAPI document). */
export function registerSchemas (app: FastifyInstance): void {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
}
