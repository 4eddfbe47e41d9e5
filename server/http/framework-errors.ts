// Answers that fastify or Node's HTTP parser would otherwise write in their own shape (a bare
// `{"statusCode","error","message"}` or an empty body): every one goes out as the envelope.
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorBody, type ErrorCode } from '../errors.js';
import { sendError } from './send-error.js';

type FrameworkError = Error & { statusCode?: number; code?: string };

/** fastify's own error codes -> ours. Anything not listed falls back on its status below. */
const FASTIFY_CODES: Record<string, { code: ErrorCode; message: (req: FastifyRequest) => string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', message: (req) => `The request body is larger than ${req.routeOptions.bodyLimit ?? 'the limit'} bytes` },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: (req) => `Unsupported content type ${JSON.stringify(req.headers['content-type'] ?? '')}; send application/json`,
  },
  FST_ERR_CTP_EMPTY_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: () => 'The Content-Type header is empty; send application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'MALFORMED_REQUEST', message: () => 'The request body does not match its Content-Length' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'INVALID_JSON', message: () => 'The request body is empty but its Content-Type is application/json' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'INVALID_JSON', message: () => 'The request body is not valid JSON' },
  FST_ERR_BAD_URL: { code: 'MALFORMED_REQUEST', message: (req) => `The URL ${JSON.stringify(req.url.slice(0, 200))} is not validly encoded` },
  FST_ERR_MAX_PARAM_LENGTH: { code: 'URI_TOO_LONG', message: () => 'A path segment of this URL is longer than 500 characters' },
  FST_ERR_HANDLER_TIMEOUT: { code: 'REQUEST_TIMEOUT', message: () => 'The request took too long to handle' },
};

/** fastify's error handler (and `frameworkErrors`): errors raised outside our procedures. */
export function sendFrameworkError(error: FrameworkError, req: FastifyRequest, reply: FastifyReply): void {
  void sendError(req, reply, frameworkAppError(error, req) ?? error);
}

/** The AppError a framework error stands for; null when it is none of the known ones (sendError judges it). */
function frameworkAppError(error: FrameworkError, req: FastifyRequest): AppError | null {
  if (error instanceof AppError) return error;
  const known = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (known) return new AppError(known.code, known.message(req));
  const status = error.statusCode ?? 500;
  if (status === 400 && error instanceof SyntaxError) return new AppError('INVALID_JSON', 'The request body is not valid JSON');
  if (status === 404) return new AppError('NOT_FOUND', error.message);
  if (status >= 400 && status < 500) return new AppError('INVALID_INPUT', error.message);
  return null;
}

/** What Node's HTTP parser reports before fastify sees a request: its code -> our answer. */
function describeClientError(code: string | undefined): { status: number; code: ErrorCode; message: string } {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, code: 'REQUEST_TIMEOUT', message: 'The request was not received in time' };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'HEADERS_TOO_LARGE', message: 'The request line and headers are larger than 16 KiB' };
    case 'HPE_INVALID_METHOD':
      return { status: 405, code: 'METHOD_NOT_ALLOWED', message: 'Unknown HTTP method' };
    default:
      return { status: 400, code: 'MALFORMED_REQUEST', message: 'The HTTP request is malformed' };
  }
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 405: 'Method Not Allowed', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/** Node's `clientError`: the socket gets one envelope answer, then is closed. */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const answer = describeClientError(error.code);
  const body = JSON.stringify(errorBody(answer.code, answer.message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${answer.status} ${STATUS_TEXT[answer.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
