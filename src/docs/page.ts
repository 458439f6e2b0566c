import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui'
import type { Config } from '../config/index.js'
import { EXACT_INTEGERS_JS } from './exact-integers.js'
import { READING_JS } from './reading.js'

// Globals of the docs page (Swagger UI's bundle and our script), for the plugin hooks below, which
// @fastify/swagger-ui writes into the page's initializer as source text.
declare const SwaggerUIBundle: { plugins: { DownloadUrl: (system: unknown) => unknown } }
declare const PetstoreDocs: { exactIntegers: (system: unknown) => unknown, reading: (system: unknown) => unknown }

export const DOCS_TITLE = 'Petstore API reference'

const LOGO_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#2f6f4f"/>' +
  '<text x="16" y="23" font-family="sans-serif" font-size="20" font-weight="bold" text-anchor="middle" fill="#fff">P</text></svg>'

/**
 * Keeps an expanded operation about two screens long: every response is application/json (or has no
 * body), so the per-response media type selector says nothing, and no response has links; every
 * 4xx and 5xx body is the same Error object (its description says so and names the codes), so its
 * example is not repeated under each status; the header tables are set tighter; the answers
 * operations share take a line each (reading.ts).
 */
const COMPACT_RESPONSES_CSS = [
  '.swagger-ui .responses-table .response-controls, .swagger-ui .responses-table .response-col_links { display: none; }',
  '.swagger-ui .responses-table .headers-wrapper td, .swagger-ui .responses-table .headers-wrapper th { padding: 2px 8px 2px 0; }',
  '.swagger-ui .responses-table tr.response[data-code^="4"] .model-example, .swagger-ui .responses-table tr.response[data-code^="5"] .model-example { display: none; }',
  '.swagger-ui .responses-table tr.petstore-shared td { padding: 2px 0; }',
  '.swagger-ui .responses-table tr.response:not(.petstore-shared) + tr.petstore-shared td { border-top: 1px solid #d8dde7; padding-top: 8px; }',
  '.swagger-ui tr.petstore-shared .markdown p, .swagger-ui tr.petstore-shared .renderedMarkdown p { margin: 0; }',
  '.swagger-ui tr.petstore-shared .response-col_description div, .swagger-ui tr.petstore-shared .response-col_description p { display: inline; }',
  '.swagger-ui .petstore-shared-headers, .swagger-ui .petstore-common-headers { font-size: 12px; color: #555; margin-left: 0.5em; }',
  '.swagger-ui .petstore-common-headers { margin: 2px 0 6px; }',
  '.swagger-ui .body-param__text { min-height: 7em; height: 7em; }',
  '.swagger-ui .petstore-shared-open { border: none; background: none; color: #3b4151; text-decoration: underline; cursor: pointer; font-size: 12px; padding: 0; }',
  '.swagger-ui .petstore-samples { margin: 0 20px 10px; font-size: 14px; }',
  '.swagger-ui .petstore-samples summary { cursor: pointer; font-weight: bold; padding: 6px 0; }',
  '.swagger-ui .petstore-sample h5 { margin: 8px 0 4px; }'
].join('\n')

/** lossless-json's browser build, from the installed package (the page loads nothing from elsewhere). */
function losslessJsonBrowserBuild (): string {
  const file = createRequire(import.meta.url).resolve('lossless-json') // the "require" entry: its UMD build
  return readFileSync(file, 'utf8').replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, '\n')
}

/** The absolute origins the document's servers name besides this one (Try-it-out may call them). */
function otherOrigins (config: Readonly<Config>): string[] {
  return [...new Set([config.publicBaseUrl, config.stagingBaseUrl].filter((u): u is string => u !== undefined).map(u => new URL(u).origin))]
}

/**
 * The /docs page: Swagger UI from the installed package under the project's own title and icon, its
 * base layout (no top bar, no third-party logo), JSON answers shown with exact integers, each
 * operation's own answers first and the shared ones a line each, code samples, `/openapi.json` linked.
 */
export function docsPageOptions (config: Readonly<Config>): FastifySwaggerUiOptions {
  return {
    routePrefix: '/docs',
    uiConfig: {
      // No validator badge: it would send the document to a third-party service.
      validatorUrl: null,
      tryItOutEnabled: true,
      displayOperationId: true,
      persistAuthorization: false,
      deepLinking: true,
      layout: 'BaseLayout',
      // Replaces the default list, so DownloadUrl (which loads the document) is named again.
      plugins: [
        (system: unknown) => SwaggerUIBundle.plugins.DownloadUrl(system),
        (system: unknown) => PetstoreDocs.exactIntegers(system),
        (system: unknown) => PetstoreDocs.reading(system)
      ]
    } as never,
    theme: {
      title: DOCS_TITLE,
      js: [
        { filename: 'lossless-json.js', content: losslessJsonBrowserBuild() },
        { filename: 'exact-integers.js', content: EXACT_INTEGERS_JS },
        { filename: 'reading.js', content: READING_JS }
      ],
      css: [{ filename: 'petstore.css', content: COMPACT_RESPONSES_CSS }],
      favicon: [{ filename: 'petstore.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: LOGO_SVG }]
    },
    logo: { type: 'image/svg+xml', content: LOGO_SVG },
    staticCSP: true,
    // The package's CSP, less what would break or leak here: upgrade-insecure-requests (plain-HTTP
    // deployments), the third-party validator image, fonts and styles from any https origin. Calls
    // ("Try it out") go to this origin, whatever name it is reached by, and to the configured base addresses.
    transformStaticCSP: (header: string) => {
      return header
        .replace(/ ?upgrade-insecure-requests;/, '')
        .replace(' validator.swagger.io', '')
        .replace(/ https:/g, '')
        .replace(/\s+/g, ' ')
        .trim() + ` connect-src ${["'self'", ...otherOrigins(config)].join(' ')};`
    }
  }
}
