// What went wrong with one provider call, in one vocabulary: every way a call can fail (an HTTP
// error, a reset, a truncated body, invalid JSON, a stream cut, a timeout) is a provider failure
// with a reason, never a 500. The router decides from it whether to retry, to count it against the
// target's breaker, and to let the next target of the route serve.
import { AppError } from '../errors.js';
import { loadedOpenAiSdk } from './client-cache.js';

export type ProviderFailureReason =
  /** 429: the provider's rate limit (Retry-After honoured). */
  | 'rate_limited'
  /** 5xx, 408 or 409 from the provider. */
  | 'server_error'
  /** No answer within the call's timeout. */
  | 'timeout'
  /** Refused, reset or closed before an answer began. */
  | 'connection'
  /** The answer began and the connection closed before it ended (half a JSON body). */
  | 'truncated'
  /** An answer that is not what the protocol says (invalid JSON, no choices). */
  | 'invalid_response'
  /** A streamed answer cut after its first token (never retried: the client saw part of it). */
  | 'stream_cut'
  /** 400/413/422: the provider refused this request; another attempt would be refused too. */
  | 'rejected'
  /** 401/403: the credential was refused. */
  | 'unauthorized'
  /** 404: the provider does not serve this model. */
  | 'not_found'
  /** The target's breaker is open: no call was made. */
  | 'circuit_open';

export interface ProviderFailure {
  reason: ProviderFailureReason;
  /** The provider's HTTP status, when it answered one. */
  status?: number;
  /** How long the provider asked to be left alone (Retry-After / retry-after-ms), when it said. */
  retryAfterMs: number | null;
  /** Whether the same request may succeed on the same target later. */
  retryable: boolean;
  /** Whether it says the target is unwell (it counts against the target's breaker). */
  countsAgainstTarget: boolean;
  /** Whether another target of the route may serve the request instead. */
  fallbackable: boolean;
}

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TRUNCATED = /terminated|other side closed|premature close|aborted|unexpected end/i;

const failure = (reason: ProviderFailureReason, extra: Partial<ProviderFailure> = {}): ProviderFailure => {
  const unwell = reason === 'rate_limited' || reason === 'server_error' || reason === 'timeout' || reason === 'connection' || reason === 'truncated' || reason === 'invalid_response' || reason === 'stream_cut';
  return {
    reason,
    retryAfterMs: null,
    retryable: unwell && reason !== 'stream_cut',
    countsAgainstTarget: unwell,
    fallbackable: unwell || reason === 'unauthorized' || reason === 'not_found' || reason === 'circuit_open',
    ...extra,
  };
};

/** Milliseconds from `retry-after-ms`, or `retry-after` in seconds or as an HTTP date; null when neither says. */
export function readRetryAfterMs(headers: { get(name: string): string | null } | undefined | null, nowMs = Date.now()): number | null {
  if (!headers || typeof headers.get !== 'function') return null;
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers.get('retry-after');
  if (!raw) return null;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : null;
}

const codeOf = (err: unknown): unknown => (err as { code?: unknown } | null)?.code ?? (err as { cause?: { code?: unknown } } | null)?.cause?.code;

/**
 * The provider failure `err` (thrown by an SDK call) stands for, or null when it is not one: the
 * caller's own abort (the client went away) and our own AppErrors pass through unchanged. Anything
 * else the SDK call threw is the provider's doing.
 */
export function classifyCallError(err: unknown): ProviderFailure | null {
  if (err instanceof AppError) return null;
  const sdk = loadedOpenAiSdk();
  if (sdk && err instanceof sdk.APIUserAbortError) return null;
  if ((err as { name?: unknown } | null)?.name === 'AbortError') return null;
  if (sdk && err instanceof sdk.APIConnectionTimeoutError) return failure('timeout');
  if (sdk && err instanceof sdk.APIConnectionError) {
    const cause = (err as { cause?: unknown }).cause;
    return failure(cause instanceof Error && TRUNCATED.test(cause.message) ? 'truncated' : 'connection');
  }
  if (sdk && err instanceof sdk.APIError) {
    const status = typeof err.status === 'number' ? err.status : undefined;
    const retryAfterMs = readRetryAfterMs(err.headers as Headers | undefined);
    if (status === undefined) return failure('connection');
    if (status === 429) return failure('rate_limited', { status, retryAfterMs });
    if (status >= 500 || status === 408 || status === 409) return failure('server_error', { status, retryAfterMs });
    if (status === 401 || status === 403) return failure('unauthorized', { status });
    if (status === 404) return failure('not_found', { status });
    return failure('rejected', { status });
  }
  if (err instanceof SyntaxError) return failure('invalid_response');
  const code = codeOf(err);
  if (typeof code === 'string' && SOCKET_CODES.has(code)) return failure(code.startsWith('UND_ERR') ? 'truncated' : 'connection');
  if (err instanceof Error && TRUNCATED.test(err.message)) return failure('truncated');
  return failure('invalid_response');
}

/** A failure after part of a streamed answer reached the client: reported, never retried or rerouted. */
export const streamCut = (cause: ProviderFailure | null): ProviderFailure => ({
  ...failure('stream_cut'),
  ...(cause?.status !== undefined ? { status: cause.status } : {}),
  retryable: false,
  fallbackable: false,
});

/** An answer with nothing a client could use (no choices at all). */
export const invalidResponse = (): ProviderFailure => failure('invalid_response');

/** The target's breaker is open until `retryAfterMs` from now. */
export const circuitOpen = (retryAfterMs: number): ProviderFailure => failure('circuit_open', { retryAfterMs, retryable: false });

const WHAT: Record<ProviderFailureReason, string> = {
  rate_limited: 'is rate limiting requests',
  server_error: 'answered with a server error',
  timeout: 'timed out',
  connection: 'could not be reached',
  truncated: 'closed the connection mid-answer',
  invalid_response: 'sent an answer that is not valid',
  stream_cut: 'cut the streamed answer',
  rejected: 'refused the request',
  unauthorized: 'refused the credentials',
  not_found: 'does not serve the model',
  circuit_open: 'is cooling down after repeated failures',
};

const retryAfterSeconds = (ms: number | null) => (ms === null ? null : Math.max(1, Math.ceil(ms / 1000)));

/**
 * The error a caller sees for a failure: 502 LLM_PROVIDER_ERROR (the provider failed) or, when no
 * call was made because every target is cooling down, 503 LLM_UNAVAILABLE. Both carry `reason`,
 * `retryable` and, when known, `retry_after_seconds` with a Retry-After header. No provider text
 * reaches the message: providers' error texts can echo part of the key.
 */
export function providerError(failed: ProviderFailure, target: { provider: string; modelRef: string }, extra: Record<string, unknown> = {}): AppError {
  const seconds = retryAfterSeconds(failed.retryAfterMs);
  const details: Record<string, unknown> = {
    provider: target.provider,
    model: target.modelRef,
    reason: failed.reason,
    ...(failed.status !== undefined ? { status: failed.status } : {}),
    retryable: failed.retryable || failed.reason === 'circuit_open',
    ...(seconds !== null ? { retry_after_seconds: seconds } : {}),
    ...extra,
  };
  const headers = seconds !== null ? { 'Retry-After': String(seconds) } : undefined;
  const status = failed.status !== undefined ? ` (HTTP ${failed.status})` : '';
  if (failed.reason === 'circuit_open') {
    return new AppError('LLM_UNAVAILABLE', `The model provider "${target.provider}" ${WHAT.circuit_open}; try again in ${seconds ?? 1} s`, details, headers);
  }
  return new AppError('LLM_PROVIDER_ERROR', `The model provider "${target.provider}" ${WHAT[failed.reason]}${status}`, details, headers);
}

export interface TransientProviderFailure {
  reason: ProviderFailureReason;
  /** What the provider asked for, or null (the caller backs off on its own). */
  retryAfterMs: number | null;
}

/**
 * For batch work (eval cases, ingestion batches) deciding whether to wait and try again: the
 * failure when `err` is a provider error that time may cure (rate limits, outages, a breaker
 * cooling down), else null.
 */
export function transientProviderFailure(err: unknown): TransientProviderFailure | null {
  if (!(err instanceof AppError) || (err.code !== 'LLM_PROVIDER_ERROR' && err.code !== 'LLM_UNAVAILABLE')) return null;
  const details = err.details ?? {};
  if (details.retryable !== true) return null;
  const seconds = typeof details.retry_after_seconds === 'number' ? details.retry_after_seconds : null;
  return { reason: (details.reason as ProviderFailureReason | undefined) ?? 'server_error', retryAfterMs: seconds === null ? null : seconds * 1000 };
}
