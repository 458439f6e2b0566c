/**
 * Header fields a request may carry once only, whose value the service acts on. Node keeps the
 * first of repeated ones and drops the rest silently (`request.headers`), while a proxy in front
 * may act on the last: two Authorization or two Host headers would then mean one thing to the
 * proxy and another here. RFC 9110 §5.3 forbids repeating a field that is not a list; RFC 9112 §3.2
 * requires 400 for a repeated Host. Content-Length is refused by Node's parser itself.
 */
const SINGLETONS = new Set(['host', 'authorization', 'content-type'])

/** The first singleton header name the raw header list repeats, lower case; undefined when none is. */
export function repeatedSingleton (rawHeaders: readonly string[]): string | undefined {
  let seen: string[] | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase()
    if (!SINGLETONS.has(name)) continue
    seen ??= []
    if (seen.includes(name)) return name
    seen.push(name)
  }
  return undefined
}
