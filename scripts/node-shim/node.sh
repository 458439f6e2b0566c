#!/bin/sh
# node_modules/.bin/node, which every npm script runs (npm puts node_modules/.bin first on PATH).
# A declared bin, so npm keeps it across `npm install <package>`. It runs the Node that
# scripts/runtime.mjs installed into node_modules/.petstore-node when the system Node is too old,
# else the next `node` on PATH after node_modules/.bin.
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd -P)
case "$here" in
  */node_modules/.bin) modules=${here%/.bin} ;;
  *) modules=$(CDPATH= cd -- "$here/../.." && pwd -P) ;; # run from scripts/node-shim itself
esac
pinned="$modules/.petstore-node/node_modules/node/bin/node"
if [ -x "$pinned" ]; then exec "$pinned" "$@"; fi
self=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
rest=$(printf '%s' "$PATH" | tr ':' '\n' | while IFS= read -r d; do
  [ -n "$d" ] && [ "$d" != "$self" ] && [ "$(CDPATH= cd -- "$d" 2>/dev/null && pwd -P)" != "$here" ] && printf '%s:' "$d"
done)
PATH=${rest%:} exec node "$@"
