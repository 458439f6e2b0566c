/**
 * Header fields a request may carry once only, whose value the service acts on. Node keeps the
 * first of repeated ones and drops the rest silently (`request.headers`), while a proxy in front
 * may act on the last: two Authorization or two Host headers would then mean one thing to the
 * proxy and another here. RFC 9110 §5.3 forbids repeating a field that is not a list; RFC 9112 §3.2
 * requires 400 for a repeated Host. Content-Length is refused by Node's parser itself.
 */
const SINGLETONS = ['host', 'authorization', 'content-type']
const SINGLETON_LENGTHS = new Set(SINGLETONS.map(name => name.length))

/**
 * The first singleton header name the raw header list repeats, lower case; undefined when none is.
 * Runs on every request: a name is lower-cased only when its length is a singleton's, and the
 * singletons seen are kept as bits, not in a list made per request.
 */
export function repeatedSingleton (rawHeaders: readonly string[]): string | undefined {
  let seen = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i]!
    if (!SINGLETON_LENGTHS.has(raw.length)) continue
    const s = SINGLETONS.indexOf(raw.toLowerCase())
    if (s === -1) continue
    if ((seen & (1 << s)) !== 0) return SINGLETONS[s]
    seen |= 1 << s
  }
  return undefined
}
