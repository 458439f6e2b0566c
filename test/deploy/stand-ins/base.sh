#!/bin/sh
# Builds the stand-in of the official base image node:24-bookworm-slim, which no registry here
# serves: Debian 12 (debootstrap minbase from Debian's mirror), the official Node build from the npm
# registry's `node` package at /usr/local/bin/node, npm 11 under /usr/local, and a `node` user with
# uid 1000, as the official image has them. Tagged with the official name, so the Dockerfile and the
# compose files build and run unchanged (podman build --pull=never).
# Usage: base.sh TAG NODE_VERSION. Does nothing when TAG exists. Run under flock by the tests, so two
# test files never build it at once.
set -eu
tag=$1
node_version=$2
if podman image exists "$tag"; then exit 0; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  exit 1
}
npm install --prefix "$work/node" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "node@$node_version" >/dev/null
install -m 0755 "$work/node/node_modules/node/bin/node" "$root/usr/local/bin/node"
npm install -g --prefix "$root/usr/local" --no-audit --no-fund --loglevel=error npm@11 >/dev/null
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
# What the official slim image leaves out of a minbase system: package lists and caches.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
tar -C "$root" -c . | podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$node_version" \
  --change 'CMD ["node"]' - "$tag" >/dev/null
