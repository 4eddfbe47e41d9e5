import { AppError } from '../errors.js';
import type { AppDeps } from '../deps.js';
import { toTenantRuntime, type TenantRuntime } from '../tenants/tenant-runtime.js';
import { hashApiKey, isWellFormedApiKey } from './api-key-format.js';
import { lookupApiKey, recordApiKeyUse, type ApiKeyLookupRow } from './store/api-keys.js';

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
  return authenticateKeyHash(deps, readKeyHash(headers));
}

/** The stored form of the request's key; 401 when it is missing or malformed (no database read). */
function readKeyHash(headers: Headers): string {
  const key = readApiKey(headers);
  if (!key) throw new AppError('MISSING_API_KEY', 'Send your API key as Authorization: Bearer <key> or x-api-key');
  // A malformed key never reaches the database.
  if (!isWellFormedApiKey(key)) throw new AppError('INVALID_API_KEY_FORMAT', 'API keys look like svc_ followed by 43 characters');
  return hashApiKey(key);
}

/** Looks the key up and answers its scope, or the 401/403 it deserves. */
async function authenticateKeyHash(deps: AppDeps, keyHash: string): Promise<ApiKeyScope> {
  return scopeOfKeyRow(deps, keyHash, await lookupApiKey(deps.sql, keyHash));
}

/**
 * The scope of a key row read now (by lookupApiKey, or by a statement that reads the key together
 * with other data): the same checks whichever statement read it. A key that passes is remembered
 * for {@link rememberedScope}; one that fails is forgotten.
 */
export function scopeOfKeyRow(deps: AppDeps, keyHash: string, row: ApiKeyLookupRow | undefined): ApiKeyScope {
  if (!row) {
    remembered.delete(keyHash);
    throw new AppError('INVALID_API_KEY', 'The API key is not recognised');
  }
  if (row.revoked_at) {
    remembered.delete(keyHash);
    throw new AppError('API_KEY_REVOKED', 'The API key was rotated or revoked');
  }
  if (!row.is_active) {
    remembered.delete(keyHash);
    throw new AppError('ACCOUNT_INACTIVE', 'The account is deactivated');
  }
  touchApiKey(deps, row.key_id, row.last_used_at);
  const scope: ApiKeyScope = {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    environmentId: row.environment_id,
    environmentName: row.environment_name,
    plan: row.plan,
    enabledDomains: row.enabled_domains,
    tenant: toTenantRuntime(row),
  };
  if (remembered.size >= REMEMBERED_MAX && !remembered.has(keyHash)) remembered.clear();
  remembered.set(keyHash, scope);
  return scope;
}

// The scope each key had when it last authenticated in this process. Never a grant: a request
// may only use it to prepare work (an intent run scans its input and computes its cache key with
// it) while the key is looked up again, in the same statement as the run's own first read, and
// the request goes on only when the fresh scope equals it (sameScope).
const REMEMBERED_MAX = 10_000;
const remembered = new Map<string, ApiKeyScope>();

/** The scope this key had at its last successful authentication in this process, if any: a guess, never a grant. */
function rememberedScope(keyHash: string): ApiKeyScope | undefined {
  return remembered.get(keyHash);
}

/** Whether two scopes of a key are the same in every field a request may depend on. */
export function sameScope(a: ApiKeyScope, b: ApiKeyScope): boolean {
  if (a === b) return true;
  return (
    a.keyId === b.keyId &&
    a.tenantId === b.tenantId &&
    a.environmentId === b.environmentId &&
    a.environmentName === b.environmentName &&
    a.plan === b.plan &&
    JSON.stringify(a.tenant) === JSON.stringify(b.tenant)
  );
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

/**
 * The API key of a request whose procedure may read the key together with its own first data (an
 * intent run). Without a remembered scope the key is looked up at once (`scope` set); with one,
 * `scope` stays null until the procedure reads the key, and nothing may be answered, written or
 * sent to a provider before then.
 */
export interface KeyedRequest {
  keyHash: string;
  /** The key's scope, looked up during this request. */
  scope: ApiKeyScope | null;
  /** The remembered scope to prepare with while `scope` is null. */
  guess: ApiKeyScope | null;
}

/** Reads the request's key (401 when missing or malformed) and looks it up unless a remembered scope lets the procedure do it. */
export async function beginKeyedRequest(deps: AppDeps, headers: Headers): Promise<KeyedRequest> {
  const keyHash = readKeyHash(headers);
  const guess = rememberedScope(keyHash) ?? null;
  return guess ? { keyHash, scope: null, guess } : { keyHash, scope: await authenticateKeyHash(deps, keyHash), guess: null };
}

/** The request's scope, looked up now if the procedure has not read the key yet (401/403 when it fails). */
export async function confirmKeyedRequest(deps: AppDeps, request: KeyedRequest): Promise<ApiKeyScope> {
  request.scope ??= await authenticateKeyHash(deps, request.keyHash);
  return request.scope;
}
