/**
 * The links of a Link header (RFC 8288), by rel: the first link of each relation type, its target as
 * written (relative targets are left for the caller to resolve).
 * @param header The header's value, or null when the answer had none (an empty map then).
 * @example
 * parseLinkHeader('</v1/pets?limit=20&cursor=abc>; rel="next"').get('next') // '/v1/pets?limit=20&cursor=abc'
 */
export function parseLinkHeader (header: string | null): Map<string, string> {
  const links = new Map<string, string>()
  if (header === null) return links
  for (const m of header.matchAll(/<([^>]*)>((?:\s*;\s*[^;,]+)*)/g)) {
    const rel = /;\s*rel\s*=\s*"?([^";,]+)"?/i.exec(m[2] ?? '')?.[1]
    if (rel !== undefined) for (const r of rel.trim().split(/\s+/)) if (!links.has(r)) links.set(r.toLowerCase(), m[1]!)
  }
  return links
}
