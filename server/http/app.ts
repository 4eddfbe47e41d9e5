import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { AppError, errorBody } from '../errors.js';
import type { AppDeps } from '../deps.js';
import { appRouter } from '../router.js';
import { registerDocs } from './docs.js';
import { registerHealth } from './health.js';
import { registerRestRoutes } from './rest-routes.js';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the HTTP host: fastify, one route per tRPC procedure (rest-routes.ts), and the raw routes. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    bodyLimit: deps.config.BODY_LIMIT_BYTES,
    trustProxy: deps.config.TRUST_PROXY,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
  });

  // JSON bodies: an empty body is "no input" (POST /rotate with no body is fine); prototype
  // poisoning keys are refused by fastify's own parser. A bodiless POST without a content type
  // reaches its handler directly.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // Only JSON bodies: anything else is 415 UNSUPPORTED_MEDIA_TYPE.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    defaultJson(req, body as string, done);
  });

  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });

  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, req, reply) => {
    sendFastifyError(error, req, reply);
  });

  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send(errorBody('ROUTE_NOT_FOUND', `No route for ${req.method} ${req.url.split('?')[0]}`));
  });

  registerHealth(app, deps);
  registerDocs(app);

  registerRestRoutes(app, {
    procedures: appRouter._def.procedures as never,
    createContext: (req) => ({
      deps,
      em: deps.orm.em.fork(),
      req: { id: req.id, ip: req.ip, headers: req.headers },
      res: { headers: {} },
    }),
  });

  return app;
}

function sendFastifyError(error: Error & { statusCode?: number; code?: string }, req: FastifyRequest, reply: FastifyReply) {
  const status = error.statusCode ?? 500;
  if (error instanceof AppError) {
    void reply.code(error.status).send(errorBody(error.code, error.message, error.details));
    return;
  }
  if (status === 413) {
    void reply.code(413).send(errorBody('PAYLOAD_TOO_LARGE', `The request body is larger than ${req.routeOptions.bodyLimit ?? 'the limit'} bytes`));
  } else if (status === 415) {
    void reply.code(415).send(errorBody('UNSUPPORTED_MEDIA_TYPE', `Unsupported content type ${JSON.stringify(req.headers['content-type'] ?? '')}; send application/json`));
  } else if (status === 400 && (error.code?.startsWith('FST_ERR_CTP') || error instanceof SyntaxError)) {
    void reply.code(400).send(errorBody('INVALID_JSON', 'The request body is not valid JSON'));
  } else if (status >= 400 && status < 500) {
    void reply.code(status).send(errorBody(status === 404 ? 'NOT_FOUND' : 'INVALID_INPUT', error.message));
  } else {
    req.log.error({ err: error }, 'unhandled error');
    void reply.code(500).send(errorBody('INTERNAL_ERROR', 'An internal error occurred', { request_id: req.id }));
  }
}

