// The shape every streaming endpoint shares: API-key auth, a JSON body checked with the route's
// schema, a `prepare` step whose refusals answer as ordinary JSON envelopes, and only then the
// event stream (server/http/sse.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { authenticateApiKey, requirePermission, type ApiKeyScope } from '../keys/authenticate-api-key.js';
import type { Permission } from '../keys/permissions.js';
import { rejectNulInUrl } from '../common/reject-nul.js';
import { sendError } from './send-error.js';
import { openSse, type SseStream } from './sse.js';

export interface SseRouteOptions<S extends z.ZodType, P> {
  /** OpenAPI-style path, e.g. `/v1/agents/{agentKey}/run/stream`. */
  path: string;
  /** What the key needs: the same permission as the JSON route the stream mirrors. */
  permission: Permission;
  /** The body schema; path parameters are merged into the body before parsing. */
  schema: S;
  bodyLimit?: number;
  /** Everything that may refuse the request, before the stream opens. */
  prepare(em: EntityManager, scope: ApiKeyScope, input: z.output<S>, req: FastifyRequest): Promise<P>;
  /** Writes the events; the stream is closed afterwards. */
  stream(em: EntityManager, prepared: P, sse: SseStream, req: FastifyRequest): Promise<void>;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function registerSseRoute<S extends z.ZodType, P>(app: FastifyInstance, deps: AppDeps, options: SseRouteOptions<S, P>): void {
  const url = options.path.replace(/\{(\w+)\}/g, ':$1');
  app.post(url, options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}, async (req, reply) => {
    const params = req.params as Record<string, string>;
    const em = deps.orm.em.fork();
    let prepared: P;
    try {
      rejectNulInUrl(params, req.query as Record<string, unknown>);
      const scope = requirePermission(await authenticateApiKey(deps, req.headers), options.permission);
      const body = req.body === undefined ? {} : req.body;
      if (!isPlainObject(body)) {
        throw new AppError('INVALID_INPUT', 'The request body must be a JSON object', { issues: [{ path: '(body)', message: 'expected a JSON object' }] });
      }
      const parsed = options.schema.safeParse({ ...body, ...params });
      if (!parsed.success) {
        throw new AppError('INVALID_INPUT', 'The request is invalid', {
          issues: parsed.error.issues.map((i) => ({ path: i.path.length ? i.path.join('.') : '(body)', message: i.message, code: i.code })),
        });
      }
      prepared = await options.prepare(em, scope, parsed.data, req);
    } catch (err) {
      return sendError(req, reply, err);
    }
    const sse = openSse(req, reply);
    try {
      await options.stream(em, prepared, sse, req);
    } finally {
      sse.close();
    }
  });
}
