import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui'
import { join } from 'node:path'
import { type Config, PROJECT_ROOT } from '../config/index.js'

// Page globals, for the hooks below that @fastify/swagger-ui writes into the page as source text.
declare const SwaggerUIBundle: { plugins: { DownloadUrl: (system: unknown) => unknown } }
declare const PetstoreDocs: { exactIntegers: (system: unknown) => unknown, reading: (system: unknown) => unknown }

export const DOCS_TITLE = 'Petstore API reference'

const LOGO_SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#2f6f4f"/>' +
  '<text x="16" y="23" font-family="sans-serif" font-size="20" font-weight="bold" text-anchor="middle" fill="#fff">P</text></svg>'

/** From the installed package: the page loads nothing from elsewhere. */
function losslessJsonBrowserBuild (): string {
  const file = createRequire(import.meta.url).resolve('lossless-json') // the "require" entry: its UMD build
  return readFileSync(file, 'utf8').replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, '\n')
}

/** The page's own scripts and styles: browser files in public/docs/, shipped as they are (neither compiled nor bundled). */
function pageFile (name: string): string {
  return readFileSync(join(PROJECT_ROOT, 'public/docs', name), 'utf8')
}

function otherOrigins (config: Readonly<Config>): string[] {
  return [...new Set([config.publicBaseUrl, config.stagingBaseUrl].filter((u): u is string => u !== undefined).map(u => new URL(u).origin))]
}

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
        { filename: 'exact-integers.js', content: pageFile('exact-integers.js') },
        { filename: 'reading.js', content: pageFile('reading.js') }
      ],
      css: [{ filename: 'petstore.css', content: pageFile('petstore.css') }],
      favicon: [{ filename: 'petstore.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: LOGO_SVG }]
    },
    logo: { type: 'image/svg+xml', content: LOGO_SVG },
    staticCSP: true,
    // Less what would break or leak here: upgrade-insecure-requests (plain-HTTP deployments), the
    // third-party validator, https fonts and styles; "Try it out" may call the configured base addresses.
    transformStaticCSP: (header: string) => header
      .replace(/ ?upgrade-insecure-requests;/, '')
      .replace(' validator.swagger.io', '')
      .replace(/ https:/g, '')
      .replace(/\s+/g, ' ')
      .trim() + ` connect-src ${["'self'", ...otherOrigins(config)].join(' ')};`
  }
}
