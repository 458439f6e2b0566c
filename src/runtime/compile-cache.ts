// Later starts read compiled code instead of compiling again (best effort; `npm run build` fills it).
// The default import: on a Node without enableCompileCache, a named one fails before node-version.js speaks.
import module from 'node:module'
import { fileURLToPath } from 'node:url'

module.enableCompileCache?.(fileURLToPath(new URL('../../node_modules/.cache/petstore-compile', import.meta.url)))
