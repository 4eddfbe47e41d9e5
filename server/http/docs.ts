import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from '../errors.js';
import { sendError } from './send-error.js';

const require = createRequire(import.meta.url);

/**
 * swagger-ui-dist's folder, or null when it is not installed: it is an optional feature (a
 * peerDependency, left out by `npm ci --omit=peer`), and /docs then points to the document alone.
 */
function findSwaggerUi(): string | null {
  try {
    return path.dirname(require.resolve('swagger-ui-dist/package.json'));
  } catch {
    return null;
  }
}

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

// Without swagger-ui-dist: the page says so and links the document, which any OpenAPI viewer reads.
const PAGE_WITHOUT_UI = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Liya API reference</title>
</head>
<body>
  <h1>Liya API reference</h1>
  <p>The OpenAPI 3.1 document of every route: <a href="/openapi.json">/openapi.json</a>.</p>
  <p>The interactive reference is an optional feature that this install left out (the package
  swagger-ui-dist): install without <code>--omit=peer</code> to have it here.</p>
</body>
</html>`;

/**
 * `/openapi.json` and an interactive reference at `/docs`, every asset served from this process.
 * The assets (~1.8 MB) are streamed from swagger-ui-dist's files rather than kept in memory: the
 * operating system's file cache holds them while they are asked for, browsers cache them a day.
 */
export function registerDocs(app: FastifyInstance) {
  const swaggerDir = findSwaggerUi();
  app.get('/openapi.json', async (_req, reply) => sendOpenApiDocument(reply));
  app.get('/docs', async (_req, reply) => reply.type('text/html; charset=utf-8').send(swaggerDir ? PAGE : PAGE_WITHOUT_UI));
  app.get<{ Params: { file: string } }>('/docs/assets/:file', async (req, reply) => {
    const type = ASSETS[req.params.file];
    if (!type) return sendError(req, reply, new AppError('NOT_FOUND', 'No such asset'));
    if (!swaggerDir) return sendError(req, reply, new AppError('NOT_FOUND', 'The interactive API reference is not installed (swagger-ui-dist)'));
    return reply.type(type).header('cache-control', 'public, max-age=86400').send(createReadStream(path.join(swaggerDir, req.params.file)));
  });
}
