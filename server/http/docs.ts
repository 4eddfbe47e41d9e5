import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from '../errors.js';
import { sendError } from './send-error.js';

const require = createRequire(import.meta.url);
const swaggerDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));

// The compiled server serves the document its build wrote (scripts/build.mjs): generating it loads
// trpc-to-openapi and every framework adapter it bundles (~6 MB of heap) for the rest of the
// process's life. Run from the TypeScript sources (tests, development), it is generated on first
// request.
const builtDocument = import.meta.url.endsWith('.js') ? fileURLToPath(new URL('../../openapi.json', import.meta.url)) : null;
let documentJson: Buffer | null = null;

async function sendOpenApiDocument(reply: FastifyReply) {
  if (!documentJson && builtDocument && existsSync(builtDocument)) documentJson = readFileSync(builtDocument);
  if (documentJson) return reply.type('application/json; charset=utf-8').send(documentJson);
  const { getOpenApiDocument } = await import('./openapi.js');
  return getOpenApiDocument();
}

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Liya API reference</title>
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui', deepLinking: true,
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });
  </script>
</body>
</html>`;

/**
 * `/openapi.json` and an interactive reference at `/docs`, every asset served from this process.
 * The assets (~1.8 MB) are streamed from swagger-ui-dist's files rather than kept in memory: the
 * operating system's file cache holds them while they are asked for, browsers cache them a day.
 */
export function registerDocs(app: FastifyInstance) {
  app.get('/openapi.json', async (_req, reply) => sendOpenApiDocument(reply));
  app.get('/docs', async (_req, reply) => reply.type('text/html; charset=utf-8').send(PAGE));
  app.get<{ Params: { file: string } }>('/docs/assets/:file', async (req, reply) => {
    const type = ASSETS[req.params.file];
    if (!type) return sendError(req, reply, new AppError('NOT_FOUND', 'No such asset'));
    return reply.type(type).header('cache-control', 'public, max-age=86400').send(createReadStream(path.join(swaggerDir, req.params.file)));
  });
}
