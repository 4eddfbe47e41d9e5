// The read before an intent run's model call: usage_counters, tenant_provider_keys and intent_cache
// in one statement; or the same together with the API key lookup (api_keys, tenants, environments).
import type { SqlPool } from '../../../db/sql-pool.js';
import { API_KEY_LOOKUP_COLUMNS, API_KEY_LOOKUP_FROM, type ApiKeyLookupRow } from '../../keys/store/api-keys.js';

export interface RunContextRow {
  requests: string | null;
  tokens: string | null;
  cost_usd: string | null;
  provider_key: string | null;
  cache_hit: boolean;
  cached_output: unknown;
  cached_model: string | null;
  /** Whether a subscription of the tenant names intent.run.completed (an opt-in event). */
  intent_events: boolean;
}

// The opt-in intent.run.completed: read here, before the run, so the run record's statement (the
// hottest, holding the tenant's counter row) carries the event only for tenants that want it.
const INTENT_EVENTS = (tenant: string) =>
  `exists (select 1 from event_subscriptions s where s.tenant_id = ${tenant} and s.enabled and jsonb_exists(s.event_types, 'intent.run.completed')) as intent_events`;

// This month's usage, the tenant's provider key and the cache entry: three primary-key lookups
// in one round trip (each was a query of its own, a noticeable part of a run's added latency).
// Raw(other): a hot statement on the SqlPool, run as the named prepared statement `liya_run_context`.
const RUN_CONTEXT_SQL = `
select c.requests::text, c.tokens::text, c.cost_usd::text,
       (select k.encrypted_key from tenant_provider_keys k where k.tenant_id = $1 and k.provider = $3) as provider_key,
       h.cache_key is not null as cache_hit, h.output as cached_output, h.model as cached_model,
       ${INTENT_EVENTS('$1')}
  from (select 1) as one
  left join usage_counters c on c.tenant_id = $1 and c.month = $2
  left join intent_cache h on h.cache_key = $4 and h.tenant_id = $1 and h.expires_at > now()`;

/** The run context of `tenantId` for `month` (YYYY-MM), the `provider` key and the cache entry `cacheKey` (null: none). */
export async function selectRunContext(sql: SqlPool, tenantId: string, month: string, provider: string, cacheKey: string | null): Promise<RunContextRow> {
  const [row] = await sql.query<RunContextRow>(RUN_CONTEXT_SQL, [tenantId, month, provider, cacheKey], 'liya_run_context');
  return row;
}

// The API key lookup and the run context in ONE round trip: a run whose key this process has
// seen before prepares with the key's remembered scope and sends this instead of two statements.
// Every tenant-scoped join goes through the key's own tenant (k.tenant_id), never a value the
// caller passed, so a stale guess can read nothing of another tenant. The key row comes back
// whatever its state (revoked, tenant inactive): the caller checks it as the lookup's caller does.
// Raw(other): a hot statement on the SqlPool, run as the named prepared statement `liya_key_run_context`.
const KEY_RUN_CONTEXT_SQL = `
select ${API_KEY_LOOKUP_COLUMNS},
       c.requests::text, c.tokens::text, c.cost_usd::text,
       (select p.encrypted_key from tenant_provider_keys p where p.tenant_id = k.tenant_id and p.provider = $3) as provider_key,
       h.cache_key is not null as cache_hit, h.output as cached_output, h.model as cached_model,
       ${INTENT_EVENTS('k.tenant_id')}
  from ${API_KEY_LOOKUP_FROM}
  left join usage_counters c on c.tenant_id = k.tenant_id and c.month = $2
  left join intent_cache h on h.cache_key = $4 and h.tenant_id = k.tenant_id and h.expires_at > now()
 where k.key_hash = $1`;

/** The key with this hash (revoked or not) with its tenant, and that tenant's run context as selectRunContext reads it; undefined when there is no such key. */
export async function selectKeyAndRunContext(
  sql: SqlPool, keyHash: string, month: string, provider: string, cacheKey: string | null,
): Promise<(ApiKeyLookupRow & RunContextRow) | undefined> {
  const [row] = await sql.query<ApiKeyLookupRow & RunContextRow>(KEY_RUN_CONTEXT_SQL, [keyHash, month, provider, cacheKey], 'liya_key_run_context');
  return row;
}
