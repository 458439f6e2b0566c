import type { FastifyInstance } from 'fastify'
import { ErrorSchema } from './common.js'
import { NewPetSchema, PetSchema } from './pets.js'

/**
 * The named schemas, shared by every route (through `Ref`) and emitted as the document's
 * components/schemas under their $id.
 */
export function registerSchemas (app: FastifyInstance): void {
  for (const schema of [ErrorSchema, PetSchema, NewPetSchema]) app.addSchema(schema)
}
