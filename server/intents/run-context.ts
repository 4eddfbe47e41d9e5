import type { SqlPool } from '../../db/sql-pool.js';
import { monthKey } from '../common/schemas.js';
import type { StoredProviderKey } from '../llm/llm.types.js';
import type { MonthlyUsage } from '../usage/usage.service.js';

/** What a run reads before it may call a model, beyond the tenant settings its API key brought. */
export interface RunContext {
  usedThisMonth: MonthlyUsage;
  /** The tenant's own key for the provider the run is routed to. */
  storedKey: StoredProviderKey;
  /** The cached answer, when a cache key was given and a live entry exists. */
  cacheHit: { output: unknown; model: string } | null;
}

interface ContextRow {
  requests: string | null;
  tokens: string | null;
  cost_usd: string | null;
  provider_key: string | null;
  cache_hit: boolean;
  cached_output: unknown;
  cached_model: string | null;
}

// This month's usage, the tenant's provider key and the cache entry: three primary-key lookups
// in one round trip (each was a query of its own, a noticeable part of a run's added latency).
const RUN_CONTEXT_SQL = `
select c.requests::text, c.tokens::text, c.cost_usd::text,
       (select k.encrypted_key from tenant_provider_keys k where k.tenant_id = $1 and k.provider = $3) as provider_key,
       h.cache_key is not null as cache_hit, h.output as cached_output, h.model as cached_model
  from (select 1) as one
  left join usage_counters c on c.tenant_id = $1 and c.month = $2
  left join intent_cache h on h.cache_key = $4 and h.tenant_id = $1 and h.expires_at > now()`;

export async function readRunContext(sql: SqlPool, tenantId: string, provider: string, cacheKey: string | null): Promise<RunContext> {
  const [row] = await sql.query<ContextRow>(RUN_CONTEXT_SQL, [tenantId, monthKey(), provider, cacheKey], 'liya_run_context');
  return {
    usedThisMonth: { requests: Number(row.requests ?? 0), tokens: Number(row.tokens ?? 0), costUsd: Number(row.cost_usd ?? 0) },
    storedKey: { provider, encryptedKey: row.provider_key },
    cacheHit: row.cache_hit ? { output: row.cached_output, model: row.cached_model ?? '' } : null,
  };
}
