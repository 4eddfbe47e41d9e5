// Serves every tRPC procedure that has `meta.openapi` as a plain fastify route at its OpenAPI
// method and path. trpc-to-openapi still defines the route metadata and generates the OpenAPI
// document (server/http/openapi.ts); serving goes straight from fastify's router to the
// procedure, because trpc-to-openapi's own adapter rebuilds a fetch Request, a caller proxy and
// an abort signal for every call and cost about twice the CPU per request of a hand-written
// handler (measured in test/bench). It also coerced request bodies ("7" -> 7), which a strict API
// must not do: here bodies are validated exactly as sent, and only query strings and path
// parameters (always text) are converted, by the schemas' own z.coerce.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { getTRPCErrorFromUnknown, type AnyTRPCProcedure, type TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import { AppError, invalidInput } from '../errors.js';
import type { AppDeps } from '../deps.js';
import type { Context, RouteMeta } from '../trpc.js';
import { rejectNulInUrl } from '../common/reject-nul.js';
import { sendError } from './send-error.js';

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
  deps: AppDeps;
  procedures: ProcedureRecord;
  createContext: (req: FastifyRequest) => Context;
}

// What gives back a place a route's admission gave the request (RouteMeta.admission).
const releases = new WeakMap<FastifyRequest, () => void>();
const releasePlace = async (req: FastifyRequest) => {
  releases.get(req)?.();
  releases.delete(req);
};

export function registerRestRoutes(app: FastifyInstance, options: RestRouteOptions): void {
  for (const [path, procedure] of Object.entries(options.procedures)) {
    const meta = procedure._def.meta;
    if (!meta?.openapi || procedure._def.type === 'subscription') continue;
    const { method } = meta.openapi;
    const url = meta.openapi.path.replace(/\{(\w+)\}/g, ':$1');
    const type = procedure._def.type;

    const admission = meta.admission;
    app.route({
      method,
      url,
      ...(meta.bodyLimit ? { bodyLimit: meta.bodyLimit } : {}),
      ...(admission
        ? {
            // Before the body is read: a refused request is answered without parsing it.
            onRequest: async (req: FastifyRequest, reply: FastifyReply) => {
              try {
                releases.set(req, await admission(options.deps, req.headers));
              } catch (err) {
                return sendError(req, reply, err);
              }
            },
            onResponse: releasePlace,
            onRequestAbort: releasePlace,
          }
        : {}),
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const params = req.params as Record<string, string>;
        let input: Record<string, unknown>;
        try {
          rejectNulInUrl(params, req.query as Record<string, unknown>);
        } catch (nul) {
          return sendError(req, reply, nul);
        }
        if (BODY_METHODS.has(method)) {
          const body = req.body;
          if (body !== undefined && !isPlainObject(body)) {
            return sendError(req, reply, invalidInput('The request body must be a JSON object', [{ path: '(body)', message: 'expected a JSON object' }]));
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
          return sendError(req, reply, appErrorOf(getTRPCErrorFromUnknown(cause)));
        }
      },
    });
  }
}

function toIssues(error: ZodError) {
  return error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.join('.') : '(body)',
    message: issue.message,
    code: issue.code,
  }));
}

/**
 * What a procedure's error means to the client: the AppError it threw; INVALID_INPUT listing
 * every failing field when its input did not parse; tRPC's own request errors by their code.
 * Anything else is returned as it was thrown, for sendError to judge (409, 503 or a 500).
 */
function appErrorOf(error: TRPCError): unknown {
  const cause = error.cause;
  if (cause instanceof AppError) return cause;
  if (error.code === 'BAD_REQUEST' && cause instanceof ZodError) return invalidInput('The request is invalid', toIssues(cause));
  switch (error.code) {
    case 'PARSE_ERROR':
      return new AppError('INVALID_JSON', 'The request body is not valid JSON');
    case 'BAD_REQUEST':
      return new AppError('INVALID_INPUT', error.message);
    case 'NOT_FOUND':
      return new AppError('ROUTE_NOT_FOUND', 'No route matches this method and path');
    case 'UNSUPPORTED_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json');
    case 'PAYLOAD_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large');
    default:
      return cause ?? error;
  }
}
