// The document's error answers and response headers: one ErrorEnvelope component (the shape
// errors.ts errorBody writes and send-error.ts sends), each route's codes grouped by status, and
// the headers the HTTP layer adds (x-request-id on every answer, Retry-After where a code says
// when to try again).
import { ERROR_STATUS, type ErrorCode } from '../errors.js';
import type { AuthKind } from '../trpc.js';

export const AUTH_ERRORS: Record<AuthKind, ErrorCode[]> = {
  none: [],
  apiKey: ['MISSING_API_KEY', 'INVALID_API_KEY', 'INVALID_API_KEY_FORMAT', 'API_KEY_REVOKED', 'API_KEY_EXPIRED', 'ACCOUNT_INACTIVE', 'PERMISSION_DENIED'],
  dashboard: ['UNAUTHORIZED', 'INVALID_TOKEN', 'TOKEN_EXPIRED', 'ACCOUNT_INACTIVE', 'FORBIDDEN'],
  admin: ['ADMIN_UNAUTHORIZED', 'ADMIN_DISABLED'],
};

export const SECURITY: Record<AuthKind, Record<string, string[]>[]> = {
  none: [],
  apiKey: [{ ApiKeyBearer: [] }, { ApiKeyHeader: [] }],
  dashboard: [{ DashboardJwt: [] }],
  admin: [{ AdminSecret: [] }],
};

/**
 * Codes whose answer carries Retry-After (seconds): every AppError thrown with that header.
 * LLM_PROVIDER_ERROR carries it when the failure is retryable.
 */
const RETRY_AFTER_CODES = new Set<ErrorCode>([
  'RATE_LIMITED', 'CONCURRENCY_LIMIT', 'QUOTA_EXCEEDED', 'RUN_BUSY', 'IDEMPOTENCY_IN_PROGRESS', 'DEPLOYMENT_IN_PROGRESS',
  'DATABASE_UNAVAILABLE', 'LLM_UNAVAILABLE', 'LLM_PROVIDER_ERROR',
]);

/**
 * What the HTTP layer may answer on any route before the route runs (the document's `default`
 * response): a malformed request, a body the parser refuses (not JSON, too large, too deep, a NUL
 * character), a request too slow or too large to read, an unexpected error.
 */
const HTTP_LAYER_CODES: ErrorCode[] = [
  'MALFORMED_REQUEST', 'INVALID_JSON', 'INVALID_INPUT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'REQUEST_TIMEOUT', 'URI_TOO_LONG',
  'HEADERS_TOO_LARGE', 'INTERNAL_ERROR', 'DATABASE_UNAVAILABLE',
];

export const ERROR_ENVELOPE_REF = '#/components/schemas/ErrorEnvelope';

export const errorEnvelopeSchema = {
  type: 'object',
  description: 'The body of every failing response (4xx and 5xx). Each response lists the codes it may carry.',
  required: ['success', 'error'],
  properties: {
    success: { type: 'boolean', const: false },
    error: {
      type: 'object',
      required: ['code', 'message'],
      additionalProperties: false,
      properties: {
        code: { type: 'string', description: 'Stable, machine-readable: branch on it, never on the message.' },
        message: { type: 'string', description: 'For people; may change.' },
        details: {
          type: 'object',
          description: 'Depends on the code: `issues` (INVALID_INPUT), `request_id` (INTERNAL_ERROR), `retryable` and `retry_after_seconds` (answers worth repeating), and others each code documents.',
          additionalProperties: true,
          properties: {
            issues: {
              type: 'array',
              description: 'INVALID_INPUT: one `{path, message, code?}` per failing field; GUARDRAIL_BLOCKED: the guardrail issues (`type`, `severity`, …).',
              items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' }, code: { type: 'string' } } },
            },
            request_id: { type: 'string' },
            retryable: { type: 'boolean' },
            retry_after_seconds: { type: 'number' },
          },
        },
      },
    },
  },
};

export const responseHeaderComponents = {
  RequestId: {
    description: 'The request\'s id: the caller\'s own `x-request-id` when it is 1-128 characters of [A-Za-z0-9._:-], else a new UUID. Logs and traces carry it.',
    required: true,
    schema: { type: 'string' },
  },
  RetryAfter: {
    description: `Seconds to wait before trying again. Sent with ${[...RETRY_AFTER_CODES].join(', ')} (LLM_PROVIDER_ERROR when \`details.retryable\`).`,
    required: false,
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
};

export const REQUEST_ID_HEADER = { 'x-request-id': { $ref: '#/components/headers/RequestId' } };
const RETRY_AFTER_HEADER = { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } };

/** An error response: the envelope, its code narrowed to `codes`. */
function errorResponse(description: string, codes: ErrorCode[], headers: Record<string, unknown>) {
  return {
    description,
    headers,
    content: {
      'application/json': {
        schema: {
          allOf: [{ $ref: ERROR_ENVELOPE_REF }],
          type: 'object',
          properties: { error: { type: 'object', properties: { code: { type: 'string', enum: codes } } } },
        },
      },
    },
  };
}

/** One response per status for `codes`, each with its codes, x-request-id and, when one of them sends it, Retry-After. */
export function errorResponses(codes: ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const code of codes) {
    const status = ERROR_STATUS[code];
    if (!byStatus.has(status)) byStatus.set(status, new Set());
    byStatus.get(status)!.add(code);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, set]) => {
        const list = [...set];
        const retry = list.some((code) => RETRY_AFTER_CODES.has(code));
        return [String(status), errorResponse(list.join(', '), list, { ...REQUEST_ID_HEADER, ...(retry ? RETRY_AFTER_HEADER : {}) })];
      }),
  );
}

/**
 * Every operation's `default`: the HTTP layer's own refusals, any status. Node's parser answers
 * malformed requests, slow ones and oversized headers on the socket, without a request id.
 */
export function defaultErrorResponse() {
  return errorResponse(
    `Refused by the HTTP layer before the route ran: ${HTTP_LAYER_CODES.join(', ')} (see the introduction)`,
    HTTP_LAYER_CODES,
    { 'x-request-id': { ...responseHeaderComponents.RequestId, required: false }, ...RETRY_AFTER_HEADER },
  );
}
