import type { SqlPool } from '../../db/sql-pool.js';
import { monthKey } from '../common/schemas.js';
import type { StoredProviderKey } from '../llm/llm.types.js';
import type { MonthlyUsage } from '../usage/usage.service.js';
import { selectRunContext } from './store/run-context.js';

/** What a run reads before it may call a model, beyond the tenant settings its API key brought. */
export interface RunContext {
  usedThisMonth: MonthlyUsage;
  /** The tenant's own key for the provider the run is routed to. */
  storedKey: StoredProviderKey;
  /** The cached answer, when a cache key was given and a live entry exists. */
  cacheHit: { output: unknown; model: string } | null;
}

/** This month's usage, the tenant's provider key and the cache entry, in one round trip. */
export async function readRunContext(sql: SqlPool, tenantId: string, provider: string, cacheKey: string | null): Promise<RunContext> {
  const row = await selectRunContext(sql, tenantId, monthKey(), provider, cacheKey);
  return {
    usedThisMonth: { requests: Number(row.requests ?? 0), tokens: Number(row.tokens ?? 0), costUsd: Number(row.cost_usd ?? 0) },
    storedKey: { provider, encryptedKey: row.provider_key },
    cacheHit: row.cache_hit ? { output: row.cached_output, model: row.cached_model ?? '' } : null,
  };
}
