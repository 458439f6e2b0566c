import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { listeningApp, rawExchange, type RawResponse } from '../helpers/raw.js'

/*
 * The request line and what is decided from a request's head, sent as raw bytes: the version, the
 * forms of request target (RFC 9112 §3.2), HEAD's headers beside GET's (RFC 9110 §9.3.2), the docs
 * page's static files' refusals, and `Expect: 100-continue` refused from the head alone.
 */
async function one (port: number, data: string): Promise<RawResponse> {
  const { responses } = await rawExchange(port, data, { count: 1 })
  const res = responses.find(r => r.status >= 200)
  assert.ok(res !== undefined, `no final response to ${JSON.stringify(data.split('\r\n', 1)[0])}`)
  return res
}

function errorBody (res: RawResponse): { code: string, message: string, status: number } {
  const body = JSON.parse(res.body) as { code: string, message: string, status: number }
  assert.equal(body.status, res.status, res.raw)
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'])
  return body
}

describe('the request target (raw sockets)', () => {
  it('answers a target of no form a server takes 400 bad_request, whatever the method, and closes', async (t) => {
    const ta = await listeningApp(t)
    for (const target of ['*?x', '*x', 'foo?bar', 'example.com:443', 'http://x:99999/healthz', 'http:///healthz', 'http://u@x/healthz', 'http://x:99999/v1/pets']) {
      for (const method of ['GET', 'POST', 'OPTIONS', 'HEAD']) {
        const res = await one(ta.port, `${method} ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`)
        assert.equal(res.status, 400, `${method} ${target}: ${res.raw.slice(0, 300)}`)
        assert.equal(res.headers.connection, 'close', `${method} ${target}`)
        assert.equal(res.headers['x-content-type-options'], 'nosniff', `${method} ${target}`)
        assert.match(res.headers['x-request-id'] ?? '', /./, `${method} ${target}`)
        assert.equal(res.headers.allow, undefined, `${method} ${target}`)
        if (method !== 'HEAD') assert.equal(errorBody(res).code, 'bad_request', `${method} ${target}`)
      }
    }
  })

  it('routes a valid absolute-form target by its path, as the origin-form', async (t) => {
    const ta = await listeningApp(t)
    for (const target of ['http://x/healthz', 'HTTPS://x:8443/healthz', 'http://[::1]:80/healthz']) {
      const res = await one(ta.port, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`)
      assert.equal(res.status, 200, `${target}: ${res.raw.slice(0, 300)}`)
      assert.deepEqual(JSON.parse(res.body), { status: 'ok' })
    }
    const star = await one(ta.port, 'GET * HTTP/1.1\r\nHost: x\r\n\r\n')
    assert.equal(star.status, 400)
  })
})

describe('the HTTP version of the request line (raw sockets)', () => {
  it('answers a major version other than 1 with 505 http_version_not_supported, and closes', async (t) => {
    const ta = await listeningApp(t)
    for (const line of ['GET /healthz HTTP/2.0', 'GET /healthz HTTP/3.0']) {
      const res = await one(ta.port, `${line}\r\nHost: x\r\n\r\n`)
      assert.equal(res.status, 505, `${line}: ${res.raw.slice(0, 300)}`)
      assert.equal(res.headers.connection, 'close')
      assert.equal(errorBody(res).code, 'http_version_not_supported', line)
    }
    // The HTTP/2 connection preface (prior knowledge, RFC 9113 §3.3).
    const preface = await one(ta.port, 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')
    assert.equal(preface.status, 505, preface.raw)
  })

  it('answers a request line without a version (read as HTTP/0.9) 400 bad_request, and closes', async (t) => {
    const ta = await listeningApp(t)
    for (const line of ['GET /healthz', 'GET /healthz HTTP/0.9']) {
      const res = await one(ta.port, `${line}\r\nHost: x\r\n\r\n`)
      assert.equal(res.status, 400, `${line}: ${res.raw.slice(0, 300)}`)
      assert.equal(res.headers.connection, 'close')
      assert.equal(errorBody(res).code, 'bad_request', line)
    }
  })

  it('answers an HTTP/1.x the parser refuses 400 bad_request naming the version and saying to send HTTP/1.1', async (t) => {
    const ta = await listeningApp(t)
    for (const version of ['1.2', '1.9']) {
      const res = await one(ta.port, `GET /healthz HTTP/${version}\r\nHost: x\r\n\r\n`)
      assert.equal(res.status, 400, res.raw)
      const body = errorBody(res)
      assert.equal(body.code, 'bad_request')
      assert.match(body.message, new RegExp(`HTTP/${version.replace('.', '\\.')} .*send the request as HTTP/1\\.1`))
    }
  })
})

describe('HEAD beside GET (raw sockets)', () => {
  it('answers HEAD with the status and headers of GET, Content-Length included, on refusals that name the method', async (t) => {
    const ta = await listeningApp(t)
    const auth = `Authorization: ${ta.auth.authorization}\r\n`
    const cases: Array<[string, string]> = [['/nope', ''], ['/v1/nope', auth], ['/docs/static/nope.js', ''], ['*', ''], ['/v1/pets/1/nope', auth]]
    for (const [target, extra] of cases) {
      const get = await one(ta.port, `GET ${target} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`)
      const head = await one(ta.port, `HEAD ${target} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`)
      assert.ok(get.status >= 400, `${target}: ${get.raw.slice(0, 200)}`)
      assert.equal(head.status, get.status, target)
      assert.equal(head.headers['content-length'], String(Buffer.byteLength(get.body)), `HEAD ${target}: its Content-Length is GET's body length`)
      const strip = (h: Record<string, string>): Record<string, string> => {
        const { date: _d, 'x-request-id': _id, ratelimit: _r, ...rest } = h
        return rest
      }
      assert.deepEqual(strip(head.headers), strip(get.headers), target)
    }
  })
})

describe('the docs page\'s static files (raw sockets)', () => {
  it('answers an unsatisfiable range 416 and a failed precondition 412 as the API\'s Error, HEAD alike', async (t) => {
    const ta = await listeningApp(t)
    const file = '/docs/static/swagger-ui.css'
    const range = await one(ta.port, `GET ${file} HTTP/1.1\r\nHost: x\r\nRange: bytes=99999999-\r\n\r\n`)
    assert.equal(range.status, 416, range.raw.slice(0, 300))
    assert.equal(errorBody(range).code, 'range_not_satisfiable')
    assert.match(range.headers['content-range'] ?? '', /^bytes \*\/\d+$/)
    assert.equal(range.headers['content-type'], 'application/json; charset=utf-8')
    const ifMatch = await one(ta.port, `GET ${file} HTTP/1.1\r\nHost: x\r\nIf-Match: "nope"\r\n\r\n`)
    assert.equal(ifMatch.status, 412, ifMatch.raw.slice(0, 300))
    assert.equal(errorBody(ifMatch).code, 'precondition_failed')
    const since = await one(ta.port, `GET ${file} HTTP/1.1\r\nHost: x\r\nIf-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n\r\n`)
    assert.equal(since.status, 412, since.raw.slice(0, 300))
    assert.equal(errorBody(since).code, 'precondition_failed')
    const head = await one(ta.port, `HEAD ${file} HTTP/1.1\r\nHost: x\r\nRange: bytes=99999999-\r\n\r\n`)
    assert.equal(head.status, 416)
    assert.equal(head.headers['content-length'], String(Buffer.byteLength(range.body)))
    const partial = await one(ta.port, `GET ${file} HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\n`)
    assert.equal(partial.status, 206)
    assert.equal(Buffer.byteLength(partial.body), 10)
  })
})

describe('Expect: 100-continue decided from the head (raw sockets)', () => {
  it('answers what the head alone decides with the final 4xx, never 100 Continue', async (t) => {
    const ta = await listeningApp(t)
    const head = (headers: string): string =>
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: ${ta.auth.authorization}\r\nContent-Length: 30\r\nExpect: 100-continue\r\n${headers}\r\n`
    const cases: Array<[string, number, string]> = [
      ['Content-Type: text/plain\r\n', 415, 'unsupported_media_type'],
      ['', 415, 'unsupported_media_type'],
      ['Content-Type: application/json; charset=latin1\r\n', 415, 'unsupported_media_type'],
      ['Content-Type: application/json; charset=utf-8; charset=utf-8\r\n', 415, 'unsupported_media_type'],
      ['Content-Type: application/json\r\nIdempotency-Key: a b\r\n', 400, 'invalid_parameter']
    ]
    for (const [headers, status, code] of cases) {
      const { responses } = await rawExchange(ta.port, head(headers), { count: 1, timeoutMs: 3000 })
      assert.equal(responses[0]?.status, status, `${JSON.stringify(headers)}: ${responses.map(r => r.raw).join('')}`)
      assert.equal(errorBody(responses[0]!).code, code)
      assert.equal(responses[0]!.headers.connection, 'close')
      // The same Error as the request gets with its body and no Expect.
      const body = '{"name":"Rex","categoryId":1} '
      const plain = await one(ta.port, head(headers).replace('Expect: 100-continue\r\n', '') + body)
      assert.equal(plain.body, responses[0]!.body, JSON.stringify(headers))
    }
    // A head with nothing to refuse is asked for its body.
    const { responses } = await rawExchange(ta.port, [head('Content-Type: application/json\r\n'), '{"name":"Rex","categoryId":1}  '], { gapMs: 300, count: 1 })
    assert.equal(responses[0]?.status, 100)
    assert.equal(responses[1]?.status, 201, responses.map(r => r.raw).join(''))
  })
})

describe('Accept-Encoding (raw sockets)', () => {
  it('takes x-gzip as gzip', async (t) => {
    const ta = await listeningApp(t)
    const get = async (coding: string): Promise<RawResponse> => one(ta.port, `GET /openapi.json HTTP/1.1\r\nHost: x\r\nAccept-Encoding: ${coding}\r\n\r\n`)
    const gzip = await get('gzip')
    for (const coding of ['x-gzip', 'X-GZIP;q=1, identity;q=0.1', 'br;q=0.1, x-gzip']) {
      const r = await get(coding)
      assert.equal(r.status, 200)
      assert.equal(r.headers['content-encoding'], 'gzip', coding)
      assert.equal(r.headers.etag, gzip.headers.etag, coding)
      assert.equal(r.headers['content-length'], gzip.headers['content-length'], coding)
    }
  })
})
