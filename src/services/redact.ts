/** Query parameters whose values may be credentials. */
const SECRET_PARAM = /(^|&)([^=&]*(?:key|token|secret|passw|auth|sig)[^=&]*)=[^&]*/gi
const API_KEY = /psk_[A-Za-z0-9_-]*/g
/** Whether a URL might hold a credential parameter: a cheap test first, as the replace scans the whole URL even when it changes nothing. */
const MAYBE_SECRET = /key|token|secret|passw|auth|sig/i

/**
 * The URL as it may be logged: an API key anywhere (path or query) and the value of any
 * credential-like query parameter are replaced. URLs with neither pass through untouched (no copy).
 */
export function redactUrl (url: string): string {
  const q = url.indexOf('?')
  if (!url.includes('psk_') && (q === -1 || !MAYBE_SECRET.test(url))) return url
  let out = url.replace(API_KEY, '[redacted]')
  const q2 = out.indexOf('?')
  if (q2 !== -1) out = out.slice(0, q2 + 1) + out.slice(q2 + 1).replace(SECRET_PARAM, '$1$2=[redacted]')
  return out
}
