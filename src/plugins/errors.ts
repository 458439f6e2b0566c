import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import FindMyWay from 'find-my-way'
import { ApiError, ERROR_CODES, type ErrorBody, type ErrorCode, StoreUnavailableError } from '../errors.js'

const CODE_BY_STATUS = new Map<number, ErrorCode>(
  (Object.entries(ERROR_CODES) as Array<[ErrorCode, { status: number }]>)
    .filter(([code]) => code !== 'invalid_parameter' && code !== 'invalid_json' && code !== 'bad_request')
    .map(([code, { status }]) => [status, code])
)

/** Maps anything thrown while handling a request to the one Error shape the API answers with. */
export function toApiError (err: FastifyError | Error): ApiError {
  if (err instanceof ApiError) return err
  if (err instanceof StoreUnavailableError) return new ApiError('service_unavailable', 'the store is unavailable; retry later', { 'retry-after': '1' })
  const e = err as FastifyError
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type', 'request body must be application/json')
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large', 'request body is larger than the body limit')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('validation_failed', 'request body is required: a JSON object with name and categoryId')
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_parameter', 'Content-Length does not match the body')
    case 'FST_ERR_BAD_URL':
      return new ApiError('invalid_parameter', 'the request path is not valid percent-encoded UTF-8')
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError('invalid_parameter', 'a path parameter is too long')
  }
  if (e.validation !== undefined) return new ApiError('invalid_parameter', `${e.validationContext ?? 'request'} ${e.message}`)
  const status = e.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new ApiError(CODE_BY_STATUS.get(status) ?? 'invalid_parameter', e.message)
  }
  return new ApiError('internal_error', 'an unexpected error occurred; it has been logged with the request id')
}

export function sendError (reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.headers !== undefined) reply.headers(error.headers)
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.toBody() satisfies ErrorBody)
}

/**
 * One error handler for the whole app, and 404/405 answers for unknown routes and methods.
 * 5xx details are logged with the request id, never sent.
 */
export function installErrorHandling (app: FastifyInstance, onStoreError: () => void = () => {}): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof StoreUnavailableError) onStoreError()
    const error = toApiError(err)
    if (error.statusCode >= 500) request.log.error({ err }, 'request failed')
    else if (error.code === 'internal_error') request.log.error({ err }, 'request failed')
    return sendError(reply, error)
  })
}

/** Every route, by method, to answer 405 with Allow instead of 404 when only the method is wrong. */
export class RouteTable {
  private readonly routes: Array<{ method: string, url: string }> = []
  private router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1> | undefined

  record (method: string | string[], url: string): void {
    for (const m of Array.isArray(method) ? method : [method]) this.routes.push({ method: m, url })
  }

  allowedMethods (path: string): string[] {
    if (this.router === undefined) {
      this.router = FindMyWay()
      for (const r of this.routes) this.router.on(r.method as FindMyWay.HTTPMethod, r.url, () => {})
    }
    const methods = new Set<string>()
    for (const r of this.routes) {
      if (!methods.has(r.method) && this.router.find(r.method as FindMyWay.HTTPMethod, path) !== null) methods.add(r.method)
    }
    return [...methods].sort()
  }
}

/** Answers a request no route took: 405 with Allow when the path exists for other methods, else 404. */
export function notFound (routes: RouteTable) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?', 1)[0]!
    const allowed = routes.allowedMethods(path)
    if (allowed.length > 0) {
      return sendError(reply, new ApiError('method_not_allowed', `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, { allow: allowed.join(', ') }))
    }
    return sendError(reply, new ApiError('not_found', `no route ${request.method} ${path}`))
  }
}
