import { AppError } from '../errors.js';
import type { AppDeps } from '../deps.js';
import { toTenantRuntime, type TenantRuntime } from '../tenants/tenant-runtime.js';
import { hashApiKey, isWellFormedApiKey } from './api-key-format.js';
import { lookupApiKey, recordApiKeyUse } from './store/api-keys.js';

export interface ApiKeyScope {
  keyId: string;
  tenantId: string;
  environmentId: string | null;
  environmentName: string | null;
  plan: string;
  enabledDomains: string[];
  /** The tenant's runtime settings, read in the same query (intent runs need them first). */
  tenant: TenantRuntime;
}

type Headers = Record<string, string | string[] | undefined>;

const TOUCH_INTERVAL_MS = 60_000;
// Keys touched recently by this process: last_used_at is written at most once a minute per key.
const recentlyTouched = new Map<string, number>();

/**
 * Reads the key from `x-api-key` or `Authorization: Bearer`. `x-api-key` wins when both are sent,
 * since a gateway in front may put its own credential in Authorization.
 */
export function readApiKey(headers: Headers): string | null {
  const header = headers['x-api-key'];
  if (typeof header === 'string' && header.trim().length > 0) return header.trim();
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.trim().length > 0) {
    const match = /^Bearer\s+(.+)$/i.exec(auth.trim());
    return match ? match[1].trim() : auth.trim();
  }
  return null;
}

export async function authenticateApiKey(deps: AppDeps, headers: Headers): Promise<ApiKeyScope> {
  const key = readApiKey(headers);
  if (!key) throw new AppError('MISSING_API_KEY', 'Send your API key as Authorization: Bearer <key> or x-api-key');
  // A malformed key never reaches the database.
  if (!isWellFormedApiKey(key)) throw new AppError('INVALID_API_KEY_FORMAT', 'API keys look like svc_ followed by 43 characters');
  const row = await lookupApiKey(deps.sql, hashApiKey(key));
  if (!row) throw new AppError('INVALID_API_KEY', 'The API key is not recognised');
  if (row.revoked_at) throw new AppError('API_KEY_REVOKED', 'The API key was rotated or revoked');
  if (!row.is_active) throw new AppError('ACCOUNT_INACTIVE', 'The account is deactivated');
  touchApiKey(deps, row.key_id, row.last_used_at);
  return {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    environmentId: row.environment_id,
    environmentName: row.environment_name,
    plan: row.plan,
    enabledDomains: row.enabled_domains,
    tenant: toTenantRuntime(row),
  };
}

function touchApiKey(deps: AppDeps, keyId: string, lastUsedAt: Date | null) {
  const now = Date.now();
  if (lastUsedAt && now - new Date(lastUsedAt).getTime() < TOUCH_INTERVAL_MS) return;
  const touched = recentlyTouched.get(keyId);
  if (touched && now - touched < TOUCH_INTERVAL_MS) return;
  recentlyTouched.set(keyId, now);
  if (recentlyTouched.size > 10_000) recentlyTouched.clear();
  // Fire and forget: a lost touch only makes apiKeyLastUsedAt a minute older.
  recordApiKeyUse(deps.sql, keyId).catch((err: unknown) => deps.log.warn({ err }, 'could not record api key use'));
}
