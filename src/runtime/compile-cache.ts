/*
 * Imported by the server entry right after node-version.js, before any package is evaluated: Node
 * keeps the code it compiles for every module loaded after this (V8's code cache, keyed by source
 * and Node version) in node_modules/.cache/petstore-compile of the project, and later starts read it
 * instead of compiling again, a large part of a start's CPU.
 * `npm run build` fills it (scripts/bundle.mjs), so even the first start after a build finds it.
 * Best effort: a read-only directory only means no cache (Node reports FAILED, nothing is thrown);
 * NODE_DISABLE_COMPILE_CACHE=1 turns it off, and a NODE_COMPILE_CACHE set by the operator wins.
 */
// The default export, not a named import: on a Node without it (< 22.1), linking would fail before
// node-version.js could say which Node is needed.
import module from 'node:module'
import { fileURLToPath } from 'node:url'

module.enableCompileCache?.(fileURLToPath(new URL('../../node_modules/.cache/petstore-compile', import.meta.url)))
