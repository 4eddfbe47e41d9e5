// The one writer of error responses. Every route — procedures served as REST, streams, webhooks,
// fastify's own errors and unknown routes — hands its error here: an AppError goes out as its
// envelope, status and headers; a lost race (409) or the database out of reach (503) as
// errors.ts expectedFailure says, logged as a warning; anything else is a bug: a logged 500 whose
// body carries the request id and nothing of the error. (Node's parser errors arrive before a
// request exists; framework-errors.ts answers those on the socket with the same envelope.)
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorBody, expectedFailure } from '../errors.js';

export function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  let answer = err instanceof AppError ? err : null;
  if (!answer) {
    answer = expectedFailure(err);
    if (answer) req.log.warn({ err, code: answer.code }, 'request failed: a concurrent change or the database out of reach');
  }
  if (answer) return reply.code(answer.status).headers(answer.headers ?? {}).send(errorBody(answer.code, answer.message, answer.details));
  req.log.error({ err }, 'unhandled error');
  return reply.code(500).send(errorBody('INTERNAL_ERROR', 'An internal error occurred', { request_id: req.id }));
}
