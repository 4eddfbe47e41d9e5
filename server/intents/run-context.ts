import type { SqlPool } from '../../db/sql-pool.js';
import { monthKey } from '../common/schemas.js';
import type { ApiKeyLookupRow } from '../keys/key-records.js';
import type { StoredProviderKey } from '../llm/llm.types.js';
import type { MonthlyUsage } from '../usage/usage.service.js';
import { selectKeyAndRunContext, selectRunContext, type RunContextRow } from './store/run-context.js';

/** What a run reads before it may call a model, beyond the tenant settings its API key brought. */
export interface RunContext {
  usedThisMonth: MonthlyUsage;
  /** The tenant's own key for the provider the run is routed to. */
  storedKey: StoredProviderKey;
  /** The cached answer, when a cache key was given and a live entry exists. */
  cacheHit: { output: unknown; model: string } | null;
  /** A subscription wants intent.run.completed: the run record records it. */
  intentEvents: boolean;
}

const toRunContext = (row: RunContextRow, provider: string): RunContext => ({
  usedThisMonth: { requests: Number(row.requests ?? 0), tokens: Number(row.tokens ?? 0), costUsd: Number(row.cost_usd ?? 0) },
  storedKey: { provider, encryptedKey: row.provider_key },
  cacheHit: row.cache_hit ? { output: row.cached_output, model: row.cached_model ?? '' } : null,
  intentEvents: row.intent_events === true,
});

/** This month's usage, the tenant's provider key and the cache entry, in one round trip. */
export async function readRunContext(sql: SqlPool, tenantId: string, provider: string, cacheKey: string | null): Promise<RunContext> {
  return toRunContext(await selectRunContext(sql, tenantId, monthKey(), provider, cacheKey), provider);
}

/**
 * The API key's row and its tenant's run context, in one round trip: `key` is undefined when no
 * such key exists, and `context` belongs to the key's own tenant (whatever the key's state; the
 * caller checks the key before using it).
 */
export async function readKeyAndRunContext(
  sql: SqlPool, keyHash: string, provider: string, cacheKey: string | null,
): Promise<{ key: ApiKeyLookupRow | undefined; context: RunContext | null }> {
  const row = await selectKeyAndRunContext(sql, keyHash, monthKey(), provider, cacheKey);
  return { key: row, context: row ? toRunContext(row, provider) : null };
}
