/*
 * What an API key may do. Each route under /v1 declares the one scope it needs (`config.scope`,
 * checked in routes/v1.ts); a key without it gets 403 insufficient_scope (RFC 6750 §3.1). The
 * document's security requirements are written from the same declarations.
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
