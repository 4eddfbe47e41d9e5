// The error answer of routes outside the REST adapter (streams, webhooks): an AppError as its
// envelope and status, a lost race 409 and the database out of reach 503 (errors.ts
// expectedFailure); anything else a logged 500.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorBody, expectedFailure } from '../errors.js';

export function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown) {
  if (err instanceof AppError) return reply.code(err.status).headers(err.headers ?? {}).send(errorBody(err.code, err.message, err.details));
  const expected = expectedFailure(err);
  if (expected) {
    req.log.warn({ err, code: expected.code }, 'request failed: a concurrent change or the database out of reach');
    return reply.code(expected.status).headers(expected.headers ?? {}).send(errorBody(expected.code, expected.message, expected.details));
  }
  req.log.error({ err }, 'unhandled error');
  return reply.code(500).send(errorBody('INTERNAL_ERROR', 'An internal error occurred', { request_id: req.id }));
}
