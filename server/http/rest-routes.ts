// Serves every tRPC procedure that has `meta.openapi` as a plain fastify route at its OpenAPI
// method and path. trpc-to-openapi still defines the route metadata and generates the OpenAPI
// document (server/http/openapi.ts); serving goes straight from fastify's router to the
// procedure, because trpc-to-openapi's own adapter rebuilds a fetch Request, a caller proxy and
// an abort signal for every call and cost about twice the CPU per request of a hand-written
// handler (measured in test/bench). It also coerced request bodies ("7" -> 7), which a strict API
// must not do: here bodies are validated exactly as sent, and only query strings and path
// parameters (always text) are converted, by the schemas' own z.coerce.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { getTRPCErrorFromUnknown, type AnyTRPCProcedure } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { AppError, errorBody, expectedFailure } from '../errors.js';
import { describeError, type Context, type RouteMeta } from '../trpc.js';
import { rejectNulInUrl } from '../common/reject-nul.js';

type ProcedureRecord = Record<string, AnyTRPCProcedure & { _def: { meta?: RouteMeta; type: 'query' | 'mutation' | 'subscription' } }>;

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// A repeated query key arrives as an array; every query parameter of this API is a single value.
function singleValues(query: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) out[key] = Array.isArray(value) && value.length === 1 ? value[0] : value;
  return out;
}

export interface RestRouteOptions {
  procedures: ProcedureRecord;
  createContext: (req: FastifyRequest) => Context;
}

export function registerRestRoutes(app: FastifyInstance, options: RestRouteOptions): void {
  for (const [path, procedure] of Object.entries(options.procedures)) {
    const meta = procedure._def.meta;
    if (!meta?.openapi || procedure._def.type === 'subscription') continue;
    const { method } = meta.openapi;
    const url = meta.openapi.path.replace(/\{(\w+)\}/g, ':$1');
    const type = procedure._def.type;

    app.route({
      method,
      url,
      ...(meta.bodyLimit ? { bodyLimit: meta.bodyLimit } : {}),
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const params = req.params as Record<string, string>;
        let input: Record<string, unknown>;
        try {
          rejectNulInUrl(params, req.query as Record<string, unknown>);
        } catch (nul) {
          const error = nul as AppError;
          return reply.code(error.status).send(errorBody(error.code, error.message, error.details));
        }
        if (BODY_METHODS.has(method)) {
          const body = req.body;
          if (body !== undefined && !isPlainObject(body)) {
            return reply.code(400).send(errorBody('INVALID_INPUT', 'The request body must be a JSON object', { issues: [{ path: '(body)', message: 'expected a JSON object' }] }));
          }
          input = { ...(body ?? {}), ...params };
        } else {
          input = { ...singleValues(req.query as Record<string, unknown>), ...params };
        }
        const ctx = options.createContext(req);
        try {
          const data = await procedure({ path, ctx, type, getRawInput: async () => input, signal: undefined, batchIndex: 0 });
          return reply.code(ctx.res.status ?? 200).headers(ctx.res.headers).send(data);
        } catch (cause) {
          const error = getTRPCErrorFromUnknown(cause);
          const described = describeError(error);
          if (error.cause instanceof AppError) {
            return reply.code(error.cause.status).headers(error.cause.headers ?? {}).send(errorBody(described.code, described.message, described.details));
          }
          const status = getHTTPStatusCodeFromError(error);
          const expected = expectedFailure(error.cause);
          if (expected) {
            req.log.warn({ err: error.cause, code: expected.code }, 'request failed: a concurrent change or the database out of reach');
            return reply.code(expected.status).headers(expected.headers ?? {}).send(errorBody(expected.code, expected.message, expected.details));
          }
          if (status >= 500) {
            req.log.error({ err: error.cause ?? error }, 'unhandled error');
            return reply.code(500).send(errorBody('INTERNAL_ERROR', 'An internal error occurred', { request_id: req.id }));
          }
          return reply.code(status).send(errorBody(described.code, described.message, described.details));
        }
      },
    });
  }
}
