// The CLI's HTTP client: fetch with a timeout, the `{success, data | error}` envelope unwrapped,
// and two error types the commands turn into messages and exit codes.

export interface ApiClientOptions {
  /** Server base URL, e.g. http://localhost:3000 (a trailing slash is ignored). */
  baseUrl: string;
  /** Sent as X-Admin-Secret on `auth: 'admin'` requests (none: the server answers ADMIN_UNAUTHORIZED). */
  adminSecret?: string;
  /** Dashboard JWT, sent as a bearer token on `auth: 'bearer'` requests. */
  token?: string;
  /** Time limit of one request in milliseconds (default 15000). */
  timeoutMs?: number;
  /** The fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
}

export type Auth = 'none' | 'admin' | 'bearer';

export interface RequestOptions {
  auth?: Auth;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  /** Abandons the request (Ctrl-C while following something); it then throws UnreachableError. */
  signal?: AbortSignal;
}

export interface RawResponse {
  status: number;
  body: unknown;
}

export interface ValidationIssue {
  path: string;
  message: string;
}

/** The server answered with an error envelope (or something that is not JSON). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get issues(): ValidationIssue[] {
    const issues = this.details?.issues;
    if (!Array.isArray(issues)) return [];
    return issues
      .filter((i): i is Record<string, unknown> => typeof i === 'object' && i !== null)
      .map((i) => ({ path: String(i.path ?? ''), message: String(i.message ?? '') }));
  }
}

/** No HTTP answer at all: connection refused, DNS failure, timeout. */
export class UnreachableError extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`Cannot reach the Liya server at ${url}: ${reason}`);
    this.name = 'UnreachableError';
  }
}

export const DEFAULT_TIMEOUT_MS = 15_000;

function describeFetchFailure(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
    return `no answer within ${timeoutMs / 1000} s`;
  }
  // undici reports the socket error as `cause` of a generic "fetch failed".
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  if (cause?.message === 'bad port') return 'fetch refuses to connect to this port (a "bad port" in the Fetch standard)';
  if (cause?.message) return cause.message;
  if (cause?.code) return cause.code;
  return err instanceof Error ? err.message : String(err);
}

export type ApiClient = ReturnType<typeof createApiClient>;

export function createApiClient(options: ApiClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const doFetch = options.fetch ?? fetch;

  /** Any HTTP answer is returned as is; only a missing answer throws (UnreachableError). */
  async function send(method: string, path: string, request: RequestOptions = {}): Promise<RawResponse> {
    const url = new URL(baseUrl + path);
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json' };
    if (request.auth === 'admin' && options.adminSecret) headers['x-admin-secret'] = options.adminSecret;
    if (request.auth === 'bearer' && options.token) headers.authorization = `Bearer ${options.token}`;
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers['content-type'] = 'application/json';
    }
    let res: Response;
    let text: string;
    try {
      const timeout = AbortSignal.timeout(timeoutMs);
      res = await doFetch(url, { method, headers, body, signal: request.signal ? AbortSignal.any([timeout, request.signal]) : timeout });
      text = await res.text();
    } catch (err) {
      throw new UnreachableError(baseUrl, describeFetchFailure(err, timeoutMs));
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new ApiError(res.status, 'UNEXPECTED_RESPONSE', `${method} ${path} answered HTTP ${res.status} with a body that is not JSON; is ${baseUrl} a Liya server?`);
    }
    return { status: res.status, body: parsed };
  }

  /** Sends the request and returns the envelope's `data`; an error envelope throws ApiError. */
  async function call<T>(method: string, path: string, request: RequestOptions = {}): Promise<T> {
    const { status, body } = await send(method, path, request);
    const envelope = (body ?? {}) as { success?: boolean; data?: T; error?: { code?: string; message?: string; details?: Record<string, unknown> } };
    if (status >= 200 && status < 300 && envelope.success !== false) return envelope.data as T;
    const error = envelope.error ?? {};
    throw new ApiError(status, error.code ?? `HTTP_${status}`, error.message ?? `${method} ${path} failed with HTTP ${status}`, error.details);
  }

  return {
    baseUrl,
    send,
    call,
    get: <T>(path: string, request?: Omit<RequestOptions, 'body'>) => call<T>('GET', path, request),
    post: <T>(path: string, request?: RequestOptions) => call<T>('POST', path, request),
    patch: <T>(path: string, request?: RequestOptions) => call<T>('PATCH', path, request),
  };
}
