// What every remote command needs: the server URL, the admin secret and a configured client,
// from the global options (--url, --admin-secret, --api-key, --timeout) and their environment variables.
import type { Command } from 'commander';
import { createApiClient, DEFAULT_TIMEOUT_MS, type ApiClient } from './api-client.js';
import { CliError } from './errors.js';

export const DEFAULT_URL = 'http://localhost:3000';

export interface GlobalOptions {
  url: string;
  adminSecret?: string;
  apiKey?: string;
  timeout: number;
}

export interface CommandContext {
  url: string;
  client: ApiClient;
  /** A client that sends the given dashboard token. */
  withToken(token: string): ApiClient;
  /**
   * A client that sends the tenant API key (--api-key / LIYA_API_KEY) on `auth: 'bearer'` requests;
   * a usage error when none is given. `timeoutMs` replaces the default time limit (not one set by the user).
   */
  withApiKey(options?: { timeoutMs?: number }): ApiClient;
}

/** http(s) URL without a trailing slash; anything else is a usage error. */
export function normalizeUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`--url must be an http(s) URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`--url must be an http(s) URL, got "${value}"`);
  url.search = '';
  url.hash = '';
  return url.toString().replace(/\/+$/, '');
}

export function commandContext(command: Command): CommandContext {
  const options = command.optsWithGlobals<GlobalOptions>();
  const url = normalizeUrl(options.url);
  const timeoutMs = options.timeout ?? DEFAULT_TIMEOUT_MS;
  return {
    url,
    client: createApiClient({ baseUrl: url, adminSecret: options.adminSecret, timeoutMs }),
    withToken: (token) => createApiClient({ baseUrl: url, token, timeoutMs }),
    withApiKey: ({ timeoutMs: longer } = {}) => {
      const apiKey = options.apiKey?.trim();
      if (!apiKey) {
        throw new CliError('This command needs a tenant API key', [
          'Pass --api-key <key> or set LIYA_API_KEY (a key from liya tenants create, liya keys rotate or the dashboard).',
        ]);
      }
      const userSetTimeout = ['cli', 'env'].includes(command.getOptionValueSourceWithGlobals('timeout') ?? '');
      return createApiClient({ baseUrl: url, token: apiKey, timeoutMs: longer && !userSetTimeout ? longer : timeoutMs });
    },
  };
}
