// The read before an intent run's model call: usage_counters, tenant_provider_keys and intent_cache in one statement.
import type { SqlPool } from '../../../db/sql-pool.js';

export interface RunContextRow {
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
// Raw: a hot statement on the SqlPool, run as the named prepared statement `liya_run_context`.
const RUN_CONTEXT_SQL = `
select c.requests::text, c.tokens::text, c.cost_usd::text,
       (select k.encrypted_key from tenant_provider_keys k where k.tenant_id = $1 and k.provider = $3) as provider_key,
       h.cache_key is not null as cache_hit, h.output as cached_output, h.model as cached_model
  from (select 1) as one
  left join usage_counters c on c.tenant_id = $1 and c.month = $2
  left join intent_cache h on h.cache_key = $4 and h.tenant_id = $1 and h.expires_at > now()`;

/** The run context of `tenantId` for `month` (YYYY-MM), the `provider` key and the cache entry `cacheKey` (null: none). */
export async function selectRunContext(sql: SqlPool, tenantId: string, month: string, provider: string, cacheKey: string | null): Promise<RunContextRow> {
  const [row] = await sql.query<RunContextRow>(RUN_CONTEXT_SQL, [tenantId, month, provider, cacheKey], 'liya_run_context');
  return row;
}
