# The Petstore service image: docs/how-to/deploy.md says how to build, run and upgrade it.
#
#   docker build -t petstore .
#   docker run -d -p 8080:8080 -v petstore-data:/data --read-only --tmpfs /tmp petstore
#
# Behind a TLS-inspecting proxy, give npm its CA as a build secret (never copied into a layer):
#   docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt -t petstore .
# Pin the base by digest with --build-arg NODE_IMAGE=node:24-bookworm-slim@sha256:….

ARG NODE_IMAGE=node:24-bookworm-slim

# Production dependencies only. --ignore-scripts: better-sqlite3 ships its prebuilt binary, and
# without it npm's implicit `node-gyp rebuild` needs Python and a compiler the slim base lacks; the
# project's postinstall (scripts/runtime.mjs) only picks the Node of npm scripts, and this image runs
# its base's Node directly.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY scripts/node-shim/ scripts/node-shim/
RUN --mount=type=secret,id=ca \
    if [ -f /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi && \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund && \
    # better-sqlite3's SQLite sources, build files and other platforms' binaries are not run here.
    cd node_modules/better-sqlite3 && rm -rf deps src build binding.gyp && \
    find prebuilds -type f ! -name "linux-$(node -p 'process.arch').node" -delete && \
    # The npm-scripts Node shim (a file: dependency) is not needed where node is on PATH.
    cd /app && rm -rf node_modules/petstore-node-shim node_modules/.bin/node

# The build: every dependency, then `npm run build` as in a checkout (tsc, the bundle, the compile
# cache in node_modules/.cache/petstore-compile, the client package).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY scripts/node-shim/ scripts/node-shim/
COPY packages/client/package.json packages/client/
RUN --mount=type=secret,id=ca \
    if [ -f /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi && \
    npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# The build runs as node, the user of the image: Node keeps its compile cache per user id, so a cache
# filled by root is not the one node looks for. Its files are 0600: made readable for the copy below.
RUN chown -R node:node /app
USER node
RUN node scripts/runtime.mjs && npm run build && chmod -R a+rX node_modules/.cache/petstore-compile

FROM ${NODE_IMAGE}
ARG VERSION=1.0.0
ARG SOURCE=
ARG REVISION=
LABEL org.opencontainers.image.title="petstore" \
      org.opencontainers.image.description="Petstore v1 JSON-over-HTTP service (Fastify, SQLite or PostgreSQL)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}"
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/node_modules/.cache/petstore-compile node_modules/.cache/petstore-compile
COPY --from=build /app/dist dist
COPY package.json LICENSE ./
# The document `petstore conformance` checks a deployment against.
COPY openapi/openapi.json openapi/
# The docs page's own browser scripts (src/docs/page.ts serves them as they are).
COPY public/ public/
# `petstore` on PATH (docker exec … petstore keys create --name NAME) against the same store: the
# settings below are the image's environment, so the CLI reads them too. /data belongs to node.
RUN ln -s /app/dist/cli/index.js /usr/local/bin/petstore && \
    mkdir -p /data && chown node:node /data
ENV HOST=0.0.0.0 \
    PORT=8080 \
    DATABASE_URL=sqlite:/data/petstore.db \
    FIRST_KEY_FILE=/data/first-api-key.txt \
    LOG_FORMAT=json \
    PETSTORE_CLI="docker exec <container> petstore"
USER node
VOLUME /data
EXPOSE 8080
# No HEALTHCHECK: Kubernetes ignores it (its probes are in deploy/kubernetes), and compose files
# declare their own against /readyz; see docs/how-to/deploy.md.
# node is PID 1, no init: the server handles SIGTERM (drain, then exit 0) and SIGINT itself, and
# starts no child processes, so there are no zombies to reap.
CMD ["node", "/app/dist/server.js"]
