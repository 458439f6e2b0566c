import { AUTHENTICATION_CODES, codesByStatus, EDGE_CODES, headersFor } from './responses.js'
import { ERROR_CODES, type ErrorCode } from '../errors.js'

type Json = Record<string, unknown>

const header = (name: string): Json => ({ $ref: `#/components/headers/${name}` })
const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } }

/** Codes a request that matches no operation can get: the edge codes, and the router's and /v1's own. */
const UNROUTED_CODES: ErrorCode[] = [...EDGE_CODES, 'invalid_parameter', ...AUTHENTICATION_CODES, 'not_found', 'method_not_allowed']

function errorResponse (status: number, codes: ErrorCode[]): Json {
  // The headers an operation's error of this status carries; under /v1 every answer after
  // authentication counts against the key's limit and says so.
  const names = ['X-Request-Id', ...Object.keys(headersFor(status)), 'RateLimit', 'RateLimit-Policy']
  const headers: Json = Object.fromEntries(names.map(name => [name, header(name)]))
  if (status === 405) {
    headers.Allow = {
      description: 'The methods the path has (RFC 9110 §10.2.1), comma-separated; HEAD wherever GET is.',
      required: true,
      schema: { type: 'string', pattern: '^[A-Z-]+(, [A-Z-]+)*$' },
      example: 'GET, HEAD, POST'
    }
  }
  return {
    description: `\`code\` is one of:\n\n${codes.map(c => `- \`${c}\`: ${ERROR_CODES[c].description}`).join('\n')}`,
    headers,
    content: errorContent
  }
}

/**
 * Describes, at the document's root, what a request that matches no operation gets: a path not
 * listed (404), a listed path with another method (405 with Allow), under /v1 authentication and
 * rate limits first (401, 429), and the edge answers any request can get. OpenAPI has no place for
 * these, so they are the value of the extension `x-unrouted-requests`, in the shape of an operation's
 * `responses`; the documentation routes (/docs, /openapi.json, /openapi.yaml) are described there too.
 */
export function unroutedRequests (): Json {
  const responses: Json = {}
  responses['204'] = {
    description: 'A CORS preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`), only when CORS_ORIGINS is set; ' +
      'or `OPTIONS *` (the asterisk-form target, RFC 9112 §3.2.4), with `Allow` listing every method the server has. No body.',
    headers: {
      'X-Request-Id': header('X-Request-Id'),
      Allow: {
        description: 'On `OPTIONS *` only: every method the server has, comma-separated.',
        schema: { type: 'string', pattern: '^[A-Z-]+(, [A-Z-]+)*$' },
        example: 'GET, HEAD, OPTIONS, POST'
      }
    }
  }
  for (const [status, codes] of codesByStatus(UNROUTED_CODES)) responses[String(status)] = errorResponse(status, codes)
  // The docs page's static files carry @fastify/static's weak validators.
  const docsValidator = { type: 'string', pattern: '^(W/)?"[A-Za-z0-9_-]+"$' }
  // New objects at each use: the YAML document would write an object met twice as an anchor and its aliases.
  const fileHeaders = (): Json => ({
    'Last-Modified': { description: 'Modification time of a static file.', schema: { type: 'string' } },
    'Accept-Ranges': { description: 'Static files accept byte ranges.', schema: { type: 'string' } }
  })
  const text = (...types: string[]): Json => Object.fromEntries(types.map(t => [t, { schema: { type: 'string' } }]))
  return {
    description: 'Answers to a request that matches no operation, for every method the HTTP parser accepts (CONNECT included): ' +
      '404 `not_found` for a path not listed, 405 `method_not_allowed` with `Allow` for a listed path and another method, ' +
      'decided before any body is read. Under `/v1` authentication and rate limits come first (401, 429). ' +
      'The request target `*` is answered 204 to OPTIONS and 400 `bad_request` to any other method; a target that is neither a path ' +
      '(origin-form), `*`, nor an absolute `http`/`https` URI with a valid authority (`*?x`, `example.com:443`, `http://x:99999/`) is 400 `bad_request`. ' +
      'A request line whose HTTP major version is not 1 (`HTTP/2.0`, `HTTP/3.0`) is 505 `http_version_not_supported`; ' +
      'a line without a version (HTTP/0.9) or an `HTTP/1.x` version other than 1.0 and 1.1 is 400 `bad_request` (Node\'s HTTP parser refuses it). ' +
      'A HEAD request gets the same status and headers, without a body: a message that names the method names GET.',
    responses,
    documentation: {
      description: 'GET (and HEAD) on the documentation routes, which are not operations of the API: the document (`/openapi.json`, `/openapi.yaml`: ' +
        'ETag, `Cache-Control: public, no-cache`, gzip or br per `Accept-Encoding`) and the docs page (`/docs` and its files under `/docs/static/`). ' +
        'Another method there is 405; a missing file 404.',
      paths: ['/openapi.json', '/openapi.yaml', '/docs', '/docs/', '/docs/json', '/docs/yaml', '/docs/static/{file}'],
      responses: {
        200: {
          description: 'The document, the page, or one of its files.',
          headers: {
            'X-Request-Id': header('X-Request-Id'),
            ETag: { description: 'Entity tag: strong for the document, weak (`W/"…"`, from the file\'s size and time) for a static file of the page.', schema: docsValidator },
            'Content-Encoding': { description: 'gzip or br when `Accept-Encoding` allows it (the document only).', schema: { type: 'string', enum: ['gzip', 'br'] } },
            ...fileHeaders()
          },
          content: { 'application/json': { schema: { type: 'object' } }, ...text('application/yaml', 'text/html', 'text/css', 'application/javascript', 'image/png') }
        },
        206: {
          description: 'A static file of the docs page asked with `Range` (one byte range): that part of it.',
          headers: {
            'X-Request-Id': header('X-Request-Id'),
            'Content-Range': { description: 'The range sent and the file\'s length (`bytes 0-9/187535`).', required: true, schema: { type: 'string' } },
            ETag: { description: 'The file\'s weak entity tag.', schema: docsValidator },
            ...fileHeaders()
          },
          content: text('text/css', 'application/javascript', 'text/html', 'image/png')
        },
        302: {
          description: 'To the docs page (`/docs`, `/docs/static/index.html`).',
          headers: { 'X-Request-Id': header('X-Request-Id'), Location: { description: 'The page.', required: true, schema: { type: 'string' } } }
        },
        304: {
          description: '`If-None-Match` names the current ETag; no body.',
          headers: {
            'X-Request-Id': header('X-Request-Id'),
            ETag: { description: 'The entity tag the client holds.', schema: docsValidator },
            ...fileHeaders()
          }
        },
        412: {
          description: '`If-Match` names no current ETag of the document or file, or a static file changed after `If-Unmodified-Since` (RFC 9110 §13.1.1, §13.1.4); `code` is `precondition_failed`.',
          headers: { 'X-Request-Id': header('X-Request-Id') },
          content: errorContent
        },
        416: {
          description: '`Range` names no byte range within a static file of the docs page (RFC 9110 §15.5.17); `code` is `range_not_satisfiable`.',
          headers: {
            'X-Request-Id': header('X-Request-Id'),
            'Content-Range': { description: 'The file\'s length (`bytes */187535`).', schema: { type: 'string' } }
          },
          content: errorContent
        }
      }
    }
  }
}
