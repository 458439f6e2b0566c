import type { FastifyInstance } from 'fastify'
import { ErrorSchema } from './common.js'
import { NewPetSchema, PATTERN_RULES, PetSchema, SERVICE_ASSIGNED_FIELDS } from './pets.js'
import { createValidatorCompiler } from './validator.js'

/** The named schemas, referred to by routes through `Ref` and emitted as components/schemas under their $id. */
export const SHARED_SCHEMAS = [ErrorSchema, PetSchema, NewPetSchema] as const

/** Adds the named schemas to Fastify and sets the one validator compiler of every route (schemas/validator.ts). */
export function registerSchemas (app: FastifyInstance): void {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
  app.setValidatorCompiler(createValidatorCompiler(SHARED_SCHEMAS, { patterns: PATTERN_RULES, assignedFields: SERVICE_ASSIGNED_FIELDS }))
}
