/*
 * What an API key may do. A key holds a set of scopes; each route under /v1 declares the one scope
 * it needs in its `config.scope` (checked when the route is added: routes/v1.ts), and the
 * authentication policy refuses a valid key without it (403 insufficient_scope, RFC 6750 §3.1).
 * The OpenAPI document's security requirements and securitySchemes are written from the same
 * declarations and this catalogue.
 */

/** Every scope, with what it allows. */
export const SCOPES = {
  'pets:read': 'Read: list and get animals (listPets, getPet), and the store orders route (listOrders).',
  'pets:write': 'Write: add animals (createPet).'
} as const satisfies Record<string, string>

export type Scope = keyof typeof SCOPES

/** Every scope, in catalogue order: what a key made without --scope holds, and keys made before scopes existed. */
export const ALL_SCOPES: readonly Scope[] = Object.freeze(Object.keys(SCOPES) as Scope[])

export const isScope = (s: string): s is Scope => Object.hasOwn(SCOPES, s)

/** The scopes as stored: known scopes in catalogue order, separated by one space (OAuth's `scope` syntax, RFC 6749 §3.3). */
export function scopesText (scopes: Iterable<Scope>): string {
  const set = new Set(scopes)
  return ALL_SCOPES.filter(s => set.has(s)).join(' ')
}

/**
 * The known scopes of a stored scope string, in catalogue order. A scope this version does not
 * know (written by a newer one) grants nothing here.
 */
export function parseScopesText (text: string): Scope[] {
  const words = new Set(text.split(' '))
  return ALL_SCOPES.filter(s => words.has(s))
}
