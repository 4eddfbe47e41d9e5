import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import type { AppDeps } from '../deps.js';
import { appRouter } from '../router.js';
import { trackAllowedMethods } from './allowed-methods.js';
import { registerDocs } from './docs.js';
import { answerClientError, sendFrameworkError } from './framework-errors.js';
import { registerHealth } from './health.js';
import { ProbeAwareLogController } from './request-log.js';
import { checkJsonBody } from '../common/json-body.js';
import { registerRestRoutes } from './rest-routes.js';
import { sendError } from './send-error.js';
import { httpRequestsObserved, httpServerTracing, observeHttpRequest } from '../observability/telemetry.js';
import { tracedServerFactory } from '../observability/traced-http-server.js';
import { registerMetricsRoute } from '../observability/metrics.route.js';
import { registerAgentStream } from '../agents/agent-stream.route.js';
import { registerWorkflowStream } from '../workflows/workflow-stream.route.js';
import { registerWorkflowWebhooks } from '../workflows/webhooks.route.js';
import { registerTenantArchiveRoutes } from './tenant-archive-route.js';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the HTTP host: fastify, one route per tRPC procedure (rest-routes.ts), and the raw routes. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const tracing = httpServerTracing();
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    logController: new ProbeAwareLogController(),
    bodyLimit: deps.config.BODY_LIMIT_BYTES,
    trustProxy: deps.config.TRUST_PROXY,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // A request (headers and body) must arrive within this time: a slow sender cannot hold a
    // connection open for ever. Node answers through clientErrorHandler (408 REQUEST_TIMEOUT).
    requestTimeout: deps.config.REQUEST_TIMEOUT_MS,
    http: {
      requestTimeout: deps.config.REQUEST_TIMEOUT_MS,
      headersTimeout: Math.min(60_000, deps.config.REQUEST_TIMEOUT_MS),
      // Node checks those deadlines every 30 s by default, which would let a stalled request live
      // up to 30 s past its limit.
      connectionsCheckingInterval: Math.min(5_000, Math.ceil(deps.config.REQUEST_TIMEOUT_MS / 4)),
    },
    // Bad percent-encoding and over-long path segments, which fastify answers in its own shape.
    frameworkErrors: (error, req, reply) => sendFrameworkError(error, req, reply),
    // Malformed HTTP, header overflow and timeouts, which Node answers before fastify sees them.
    clientErrorHandler: answerClientError,
    // With tracing on, each request is served inside its span (continuing the caller's traceparent).
    ...(tracing ? { serverFactory: tracedServerFactory(tracing) } : {}),
  });
  const allowedMethods = trackAllowedMethods(app);

  // JSON bodies: an empty body is "no input" (POST /rotate with no body is fine); prototype
  // poisoning keys are refused by fastify's own parser, too deep nesting and NUL characters by
  // checkJsonBody, before any route runs. A bodiless POST without a content type reaches its
  // handler directly.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // Only JSON bodies: anything else is 415 UNSUPPORTED_MEDIA_TYPE.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    defaultJson(req, body as string, (err, parsed) => {
      if (err) return done(err);
      try {
        checkJsonBody(body as string, parsed);
      } catch (refused) {
        return done(refused as Error);
      }
      done(null, parsed);
    });
  });

  // A callback hook, not an async one: no promise per request on the hot path.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    done();
  });

  if (tracing) {
    // The span is named by the route template once routing has matched it; a probe's is dropped.
    app.addHook('onRequest', (req, reply, done) => {
      if (req.routeOptions.url) tracing.setRoute(req.raw, req.routeOptions.url, (req.routeOptions.config as { probe?: boolean } | undefined)?.probe === true);
      done();
    });
  }

  if (httpRequestsObserved()) {
    // By route template (`/v1/agents/:agentKey/run`), never the raw path: ids would explode the series.
    app.addHook('onResponse', (req, reply, done) => {
      observeHttpRequest({ method: req.method, route: req.routeOptions.url ?? 'unmatched', status: reply.statusCode, durationMs: reply.elapsedTime });
      done();
    });
  }

  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, req, reply) => {
    sendFrameworkError(error, req, reply);
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0].slice(0, 300);
    const allowed = allowedMethods.forPath(path);
    if (allowed.length) {
      const message = `${req.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`;
      void sendError(req, reply, new AppError('METHOD_NOT_ALLOWED', message, { allowed }, { allow: allowed.join(', ') }));
      return;
    }
    void sendError(req, reply, new AppError('ROUTE_NOT_FOUND', `No route for ${req.method} ${path}`));
  });

  registerHealth(app, deps);
  registerMetricsRoute(app);
  registerDocs(app);
  registerAgentStream(app, deps);
  registerWorkflowStream(app, deps);
  registerWorkflowWebhooks(app, deps);
  registerTenantArchiveRoutes(app, deps);

  registerRestRoutes(app, {
    deps,
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
