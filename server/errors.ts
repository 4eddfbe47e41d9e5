// One table of error codes -> HTTP status. Domain code throws AppError; the transport maps it.
export const ERROR_STATUS = {
  INVALID_INPUT: 400,
  INVALID_JSON: 400,
  UNSUPPORTED_ATTACHMENT: 400,
  INVALID_ARCHIVE: 400,
  MALFORMED_REQUEST: 400,
  UNAUTHORIZED: 401,
  MISSING_API_KEY: 401,
  INVALID_API_KEY: 401,
  INVALID_API_KEY_FORMAT: 401,
  API_KEY_REVOKED: 401,
  API_KEY_EXPIRED: 401,
  INVALID_CREDENTIALS: 401,
  INVALID_TOKEN: 401,
  INVALID_SIGNATURE: 401,
  TOKEN_EXPIRED: 401,
  ADMIN_UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  ACCOUNT_INACTIVE: 403,
  ADMIN_DISABLED: 403,
  DOMAIN_NOT_ENABLED: 403,
  INTENT_NOT_PERMITTED: 403,
  FEATURE_NOT_ENABLED: 403,
  PERMISSION_DENIED: 403,
  DEPLOY_NOT_ALLOWED: 403,
  NOT_FOUND: 404,
  STATE_NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  EMAIL_TAKEN: 409,
  SLUG_CONFLICT: 409,
  EVENT_SUBSCRIPTION_LIMIT: 409,
  LAST_OWNER: 409,
  DOMAIN_KEY_TAKEN: 409,
  INTENT_KEY_TAKEN: 409,
  PROMPT_KEY_TAKEN: 409,
  SESSION_EXPIRED: 409,
  AGENT_KEY_TAKEN: 409,
  DEPLOY_REQUIRED: 409,
  AGENT_NOT_ACTIVE: 409,
  WORKFLOW_KEY_TAKEN: 409,
  NO_DRAFT: 409,
  NOT_A_WEBHOOK_WORKFLOW: 409,
  APPROVAL_DECIDED: 409,
  CALLBACK_ALREADY_RECEIVED: 409,
  RUN_NOT_RETRYABLE: 409,
  RUN_NOT_CANCELLABLE: 409,
  RUN_BUSY: 409,
  IDEMPOTENCY_IN_PROGRESS: 409,
  DATASET_IN_USE: 409,
  DATASET_NAME_TAKEN: 409,
  SUITE_NAME_TAKEN: 409,
  ONLINE_RULE_NAME_TAKEN: 409,
  ONLINE_RULE_LIMIT: 409,
  MONITOR_NAME_TAKEN: 409,
  MONITOR_LIMIT: 409,
  EVAL_RUN_NOT_RESUMABLE: 409,
  GATE_PENDING: 409,
  GATE_FAILED: 409,
  DEPLOYMENT_STALE: 409,
  DEPLOYMENT_IN_PROGRESS: 409,
  KEY_NAME_TAKEN: 409,
  ERASURE_RUNS_IN_FLIGHT: 409,
  RUNS_IN_FLIGHT: 409,
  TENANT_EXISTS: 409,
  IMPORT_CONFLICT: 409,
  BUDGET_EXHAUSTED: 402,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNPROCESSABLE: 422,
  ATTACHMENT_UNREADABLE: 422,
  IDEMPOTENCY_KEY_REUSED: 422,
  GUARDRAIL_BLOCKED: 422,
  RATE_LIMITED: 429,
  CONCURRENCY_LIMIT: 429,
  HEADERS_TOO_LARGE: 431,
  QUOTA_EXCEEDED: 429,
  EVALS_BUDGET_EXCEEDED: 429,
  EVALS_NOT_AVAILABLE: 429,
  INTERNAL_ERROR: 500,
  LLM_PROVIDER_ERROR: 502,
  OUTPUT_INVALID: 502,
  NOT_READY: 503,
  DATABASE_UNAVAILABLE: 503,
  LLM_NOT_CONFIGURED: 503,
  LLM_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ValidationIssue {
  path: string;
  message: string;
  code?: string;
}

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
  }
}

export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`);

export const invalidInput = (message: string, issues: ValidationIssue[]) =>
  new AppError('INVALID_INPUT', message, { issues });

/** The error body every failing response carries. */
export function errorBody(code: string, message: string, details?: Record<string, unknown>) {
  return { success: false as const, error: details ? { code, message, details } : { code, message } };
}

// PostgreSQL's answers to two requests changing the same rows at once: a row another request just
// deleted or started referencing (foreign key, restrict), a serialization failure, a deadlock. The request
// lost a race, not a bug: 409 CONFLICT, which a client can retry, instead of a 500.
const CONCURRENT_CHANGE_CODES = new Set(['23503', '23001', '40001', '40P01']);

/** The 409 for an error PostgreSQL raised because of a concurrent change; null for any other error. */
export function concurrentChangeError(err: unknown): AppError | null {
  const code = (err as { code?: unknown } | null)?.code ?? (err as { cause?: { code?: unknown } } | null)?.cause?.code;
  if (typeof code !== 'string' || !CONCURRENT_CHANGE_CODES.has(code)) return null;
  return new AppError('CONFLICT', 'A resource this request depends on was changed by another request at the same time; try again', { retryable: true });
}

// The database out of reach: refused or dropped connections (a restart, a failover, a network
// cut), PostgreSQL shutting down or starting up (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
// cannot_connect_now), its connection-exception class (08xxx), and pg's own words for a connection
// that ended or could not be made in time.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03']);
const UNAVAILABLE_MESSAGE = /^(Connection terminated( unexpectedly| due to connection timeout)?|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable)$/;
// Socket errors are the database's only when pg raised them: an outbound call's refused connection
// is not an outage of ours. pg and pg-pool re-capture the stack of every error they reject with
// (so it leads back to the caller), which puts their own frame first.
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const PG_FRAME = /[\\/]node_modules[\\/]pg(-pool)?[\\/]/;

function isUnavailableAlone(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message, stack } = err as { code?: unknown; message?: unknown; stack?: unknown };
  if (typeof code === 'string') {
    if (UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
    if (UNAVAILABLE_SOCKET_CODES.has(code) && typeof stack === 'string' && PG_FRAME.test(stack)) return true;
  }
  return typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message);
}

/** Whether `err` (or the error it wraps) says the database cannot be reached right now. */
export function isDatabaseUnavailable(err: unknown): boolean {
  return isUnavailableAlone(err) || isUnavailableAlone((err as { cause?: unknown } | null)?.cause);
}

/** Seconds a client is asked to wait before trying again while the database is out of reach. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** The 503 for an error that says the database is out of reach; null for any other error. */
export function databaseUnavailableError(err: unknown): AppError | null {
  if (!isDatabaseUnavailable(err)) return null;
  return new AppError(
    'DATABASE_UNAVAILABLE',
    'The database is not reachable right now; try again shortly',
    { retryable: true, retry_after_seconds: DATABASE_RETRY_AFTER_SECONDS },
    { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
  );
}

/**
 * The answer for an error that is not an AppError but is no bug either: a write that lost a race
 * (409) or the database out of reach (503). Null for anything else (a 500). Every place that turns
 * errors into responses asks this one function.
 */
export function expectedFailure(err: unknown): AppError | null {
  return concurrentChangeError(err) ?? databaseUnavailableError(err);
}
