const SECRET_PARAM = /(^|&)([^=&]*(?:key|token|secret|passw|auth|sig)[^=&]*)=[^&]*/gi
const API_KEY = /psk_[A-Za-z0-9_-]*/g
const MAYBE_SECRET = /key|token|secret|passw|auth|sig/i

/** API keys and credential-like query values replaced; a cheap test first spares most URLs the scan. */
export function redactUrl (url: string): string {
  const q = url.indexOf('?')
  if (!url.includes('psk_') && (q === -1 || !MAYBE_SECRET.test(url))) return url
  let out = url.replace(API_KEY, '[redacted]')
  const q2 = out.indexOf('?')
  if (q2 !== -1) out = out.slice(0, q2 + 1) + out.slice(q2 + 1).replace(SECRET_PARAM, '$1$2=[redacted]')
  return out
}
