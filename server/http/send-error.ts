// The error answer of routes outside the REST adapter (streams, webhooks): an AppError as its
// envelope and status; anything else a logged 500.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, concurrentChangeError, errorBody } from '../errors.js';

export function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown) {
  if (err instanceof AppError) return reply.code(err.status).headers(err.headers ?? {}).send(errorBody(err.code, err.message, err.details));
  const conflict = concurrentChangeError(err);
  if (conflict) {
    req.log.warn({ err }, 'request lost a race with a concurrent change');
    return reply.code(conflict.status).send(errorBody(conflict.code, conflict.message, conflict.details));
  }
  req.log.error({ err }, 'unhandled error');
  return reply.code(500).send(errorBody('INTERNAL_ERROR', 'An internal error occurred', { request_id: req.id }));
}
