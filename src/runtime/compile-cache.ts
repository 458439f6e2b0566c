/*
 * Imported by the server entry right after node-version.js: Node keeps the code it compiles for every
 * module loaded after this in node_modules/.cache/petstore-compile, and later starts read it instead
 * of compiling again. `npm run build` fills it. Best effort: an unwritable directory means no cache;
 * NODE_DISABLE_COMPILE_CACHE=1 turns it off; an operator's NODE_COMPILE_CACHE wins. The default
 * export, not a named import: on a Node without it, linking would fail before node-version.js speaks.
 */
import module from 'node:module'
import { fileURLToPath } from 'node:url'

module.enableCompileCache?.(fileURLToPath(new URL('../../node_modules/.cache/petstore-compile', import.meta.url)))
