// A tiny HTTP client for tests: real requests with fetch, parsed JSON, status and headers. Every
// response is checked against the OpenAPI document (openapi-check.ts) unless `validate: false`.
import { checkOpenApiResponse } from './openapi-check.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Raw body (sent as is); `json` is ignored when set. */
  raw?: string | Buffer;
  contentType?: string;
  /** false: this response is not checked against the OpenAPI document. */
  validate?: boolean;
}

export interface ClientOptions {
  /** false: no response of this client is checked against the OpenAPI document. */
  validate?: boolean;
}

export type ApiClient = ReturnType<typeof createClient>;

export function createClient(baseUrl: string, clientOptions: ClientOptions = {}) {
  async function request<T = any>(method: string, path: string, json?: unknown, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    let body: string | Buffer | undefined;
    if (options.raw !== undefined) {
      body = options.raw;
      if (options.contentType) headers['content-type'] = options.contentType;
    } else if (json !== undefined) {
      body = JSON.stringify(json);
      headers['content-type'] = options.contentType ?? 'application/json';
    }
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (options.validate ?? clientOptions.validate ?? true) checkOpenApiResponse({ method, url: path, status: res.status, headers: res.headers, text, body: parsed });
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }
  return {
    request,
    get: <T = any>(path: string, options?: RequestOptions) => request<T>('GET', path, undefined, options),
    delete: <T = any>(path: string, options?: RequestOptions) => request<T>('DELETE', path, undefined, options),
    post: <T = any>(path: string, json?: unknown, options?: RequestOptions) => request<T>('POST', path, json, options),
    patch: <T = any>(path: string, json?: unknown, options?: RequestOptions) => request<T>('PATCH', path, json, options),
  };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
