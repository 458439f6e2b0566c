import { readFileSync } from 'node:fs'
import { ResponseChecker, type SeenResponse } from '../../src/contract/response-check.js'

/*
 * Checks a response the tests received against the committed OpenAPI document (src/contract/
 * response-check.ts), refusing any header the document does not list: any drift between the service
 * and its document fails the test that saw it.
 */

export { ConformanceError, type SeenResponse } from '../../src/contract/response-check.js'

/** How a validation_failed message ends when `details` could not list every broken field (the Error schema's `details`). */
export const MORE_FIELDS = /; and \d+ more fields? breaks? a rule, not listed$/

const DOCUMENT_PATH = new URL('../../openapi/openapi.json', import.meta.url)

let shared: ResponseChecker | undefined

/** The checker for the committed document (read once per test process). */
export function conformance (): ResponseChecker {
  shared ??= new ResponseChecker(JSON.parse(readFileSync(DOCUMENT_PATH, 'utf8')), { source: 'openapi/openapi.json', refuseUndocumentedHeaders: true })
  return shared
}

/** Checks one response; throws ConformanceError naming the request and the drift. */
export function checkResponse (res: SeenResponse): void {
  conformance().check(res)
}
