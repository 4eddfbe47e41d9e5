// What every remote command needs: the server URL, the admin secret and a configured client,
// from the global options (--url, --admin-secret, --api-key, --timeout) and their environment variables.
import type { Command } from 'commander';
import { createApiClient, DEFAULT_TIMEOUT_MS, type ApiClient } from './api-client.js';
import { readCredentials, tokenExpiry, type Credentials } from './credentials.js';
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

/** What to say when no login is stored: the problem and what to do. */
export interface LoginRequirement {
  message: string;
  hints: string[];
  /** When set, the login must belong to this tenant. */
  tenantId?: string;
}

/**
 * The stored dashboard login, checked before any request: missing, for another --url, for another
 * tenant or expired is a usage error (exit 2).
 */
export async function requireDashboardLogin(ctx: CommandContext, requirement: LoginRequirement): Promise<Credentials> {
  const credentials = await readCredentials();
  const login = `liya login --url ${ctx.url} --email <email>`;
  if (!credentials) throw new CliError(requirement.message, requirement.hints.map((h) => h.replace('{login}', login)));
  if (credentials.url !== ctx.url) {
    throw new CliError(`You are logged in to ${credentials.url}, not ${ctx.url}`, [`Log in to this server: ${login}`]);
  }
  if (requirement.tenantId !== undefined && credentials.tenantId !== requirement.tenantId) {
    throw new CliError(
      `Tenant mismatch: --tenant is ${requirement.tenantId}, but you are logged in as ${credentials.email} of tenant ${credentials.tenantId}`,
      [`Pass --tenant ${credentials.tenantId}, or log in as a user of tenant ${requirement.tenantId}: ${login}`],
    );
  }
  const exp = tokenExpiry(credentials.token);
  if (exp !== null && exp * 1000 <= Date.now()) {
    throw new CliError(`Your login as ${credentials.email} has expired`, [`Log in again: liya login --url ${ctx.url} --email ${credentials.email}`]);
  }
  return credentials;
}
