import type { FastifyInstance } from 'fastify'
import { ErrorSchema } from './common.js'
import { NewPetSchema, PATTERN_RULES, PetSchema, SERVICE_ASSIGNED_FIELDS } from './pets.js'
import { createValidatorCompiler } from './validator.js'

/** The named schemas, referred to by routes through `Ref` and emitted as components/schemas under their $id. */
export const SHARED_SCHEMAS = [ErrorSchema, PetSchema, NewPetSchema] as const

/**
 * Adds the named schemas to Fastify (for the serializers and the OpenAPI document) and sets, on the
 * scope given (the root), the one validator compiler every route's request parts go through: Ajv
 * over the route's own schemas (schemas/validator.ts), never Fastify's default Ajv, which coerces
 * types and drops unknown body fields.
 */
export function registerSchemas (app: FastifyInstance): void {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
  app.setValidatorCompiler(createValidatorCompiler(SHARED_SCHEMAS, { patterns: PATTERN_RULES, assignedFields: SERVICE_ASSIGNED_FIELDS }))
}
