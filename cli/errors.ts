import { ApiError, UnreachableError } from './api-client.js';
import { CredentialsFileError } from './credentials.js';

/** Exit codes: 0 done; 1 the request or the operation failed; 2 the command line cannot work as given. */
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A failure the CLI itself detects (bad flag value, no login, tenant mismatch). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hints: string[] = [],
    readonly exitCode: number = EXIT_USAGE,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface ErrorReport {
  title: string;
  /** Indented lines under the title: validation issues, then hints. */
  issues: string[];
  hints: string[];
  exitCode: number;
}

/** API field names -> the flags that set them, so validation issues name what the user typed. */
export type FieldLabels = Record<string, string>;

const HINTS: Record<string, string> = {
  ADMIN_UNAUTHORIZED: 'Pass --admin-secret or set LIYA_ADMIN_SECRET to the server\'s ADMIN_SECRET.',
  ADMIN_DISABLED: 'The server has no ADMIN_SECRET; set it in the server\'s environment and restart it.',
  TOKEN_EXPIRED: 'Log in again: liya login --email <email>.',
  INVALID_TOKEN: 'Log in again: liya login --email <email>.',
  UNAUTHORIZED: 'Log in again: liya login --email <email>.',
  MISSING_API_KEY: 'Pass --api-key <key> or set LIYA_API_KEY.',
  INVALID_API_KEY: 'Check --api-key (or LIYA_API_KEY): the server does not know this key.',
  INVALID_API_KEY_FORMAT: 'Check --api-key (or LIYA_API_KEY): tenant API keys start with svc_.',
  API_KEY_REVOKED: 'This key was rotated; use the newer one.',
  QUOTA_EXCEEDED: 'The tenant used up its monthly quota.',
};

function labelIssuePath(path: string, labels: FieldLabels): string {
  const [head, ...rest] = path.split('.');
  const label = labels[head];
  if (!label) return path || '(body)';
  return rest.length ? `${label} (${rest.join('.')})` : label;
}

export function describeError(err: unknown, labels: FieldLabels = {}): ErrorReport {
  if (err instanceof UnreachableError) {
    return { title: err.message, issues: [], hints: ['Check --url (or LIYA_URL) and that the server is running (liya start).'], exitCode: EXIT_FAILURE };
  }
  if (err instanceof ApiError) {
    const issues = err.issues.map((i) => `${labelIssuePath(i.path, labels)}: ${i.message}`);
    const hint = HINTS[err.code];
    return { title: `${err.code} (HTTP ${err.status}): ${err.message}`, issues, hints: hint ? [hint] : [], exitCode: EXIT_FAILURE };
  }
  if (err instanceof CliError) return { title: err.message, issues: [], hints: err.hints, exitCode: err.exitCode };
  if (err instanceof CredentialsFileError) return { title: err.message, issues: [], hints: [], exitCode: EXIT_FAILURE };
  const message = err instanceof Error ? err.message : String(err);
  return { title: message, issues: [], hints: [], exitCode: EXIT_FAILURE };
}
