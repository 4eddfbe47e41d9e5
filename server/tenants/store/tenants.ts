// The tenants table; this module alone writes it.
import { sql as kysql } from 'kysely';
import { Tenant, type ITenant } from '../../../db/entities/tenant.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import type { GuardrailsConfig } from '../../guardrails/guardrails.types.js';

export type { ITenant as TenantEntity } from '../../../db/entities/tenant.js';

/** The columns of `tenants t` that make a TenantRuntime, for queries that already join the tenant. */
export const TENANT_RUNTIME_COLUMNS = `t.id as tenant_id, t.enabled_domains, t.disabled_intents, t.default_model, t.model_fallbacks, t.guardrails_config,
  t.monthly_request_quota, t.monthly_token_quota::text as monthly_token_quota`;

export interface TenantRuntimeRow {
  tenant_id: string;
  enabled_domains: string[];
  disabled_intents: string[] | null;
  default_model: string | null;
  model_fallbacks: string[] | null;
  guardrails_config: GuardrailsConfig | null;
  monthly_request_quota: number | null;
  monthly_token_quota: string | null;
}

/** The columns `scopeFromRow` needs, for a query joined to `tenants t`. */
export const TENANT_SCOPE_COLUMNS = `t.is_active as tenant_is_active, t.plan as tenant_plan, ${TENANT_RUNTIME_COLUMNS}`;
export type TenantScopeRow = TenantRuntimeRow & { tenant_is_active: boolean; tenant_plan: string };

/** The tenant's state and runtime settings; undefined when there is no such tenant. */
export async function selectTenantScopeRow(sql: SqlPool, tenantId: string): Promise<(TenantRuntimeRow & { is_active: boolean; plan: string }) | undefined> {
  // Raw: a hot statement on the SqlPool, run as a named prepared statement.
  const [row] = await sql.query<TenantRuntimeRow & { is_active: boolean; plan: string }>(
    `select t.is_active, t.plan, ${TENANT_RUNTIME_COLUMNS} from tenants t where t.id = $1`,
    [tenantId],
    'liya_run_scope',
  );
  return row;
}

/** A tenant with this month's counters and key facts (TENANT_SELECT). */
export interface TenantRow {
  id: string;
  name: string;
  type: ITenant['type'];
  plan: ITenant['plan'];
  billing_email: string | null;
  is_active: boolean;
  enabled_domains: string[];
  disabled_intents: string[];
  default_model: string | null;
  model_fallbacks: string[] | null;
  monthly_request_quota: number | null;
  monthly_token_quota: string | null;
  created_at: Date;
  updated_at: Date;
  requests: string | null;
  tokens: string | null;
  cost_usd: string | null;
  has_api_key: boolean;
  api_key_last_used_at: Date | null;
}

// Tenants with this month's counters and key facts in one statement.
// Raw: the bigint and numeric columns are cast to text (and the cost rounded) in SQL so the
// strings stay exactly as PostgreSQL writes them; with its correlated subqueries a Kysely
// translation would gain nothing and risk the output.
const TENANT_SELECT = `
  select t.id, t.name, t.type, t.plan, t.billing_email, t.is_active, t.enabled_domains, t.disabled_intents, t.default_model, t.model_fallbacks,
         t.monthly_request_quota, t.monthly_token_quota::text as monthly_token_quota, t.created_at, t.updated_at,
         c.requests::text as requests, c.tokens::text as tokens, round(c.cost_usd, 6)::text as cost_usd,
         exists(select 1 from api_keys k where k.tenant_id = t.id and k.revoked_at is null) as has_api_key,
         (select max(k.last_used_at) from api_keys k where k.tenant_id = t.id) as api_key_last_used_at
    from tenants t
    left join usage_counters c on c.tenant_id = t.id and c.month = ?`;

/** The tenant with the counters of `month` (YYYY-MM); undefined when there is none. */
export async function selectTenantRow(em: EntityManager, tenantId: string, month: string): Promise<TenantRow | undefined> {
  const rows = await em.execute<TenantRow[]>(`${TENANT_SELECT} where t.id = ?`, [month, tenantId]);
  return rows[0];
}

/** One page of tenants, newest first, with the counters of `month`. */
export async function selectTenantRows(em: EntityManager, month: string, page: { limit: number; offset: number }): Promise<TenantRow[]> {
  return em.execute<TenantRow[]>(`${TENANT_SELECT} order by t.created_at desc, t.id limit ? offset ?`, [month, page.limit, page.offset]);
}

export async function countTenants(em: EntityManager): Promise<number> {
  const { total } = await kyselyOf(em).selectFrom('tenants').select(kysql<string>`count(*)::text`.as('total')).executeTakeFirstOrThrow();
  return Number(total);
}

/** The tenant entity, or null. */
export async function findTenantEntity(em: EntityManager, tenantId: string): Promise<ITenant | null> {
  return em.findOne(Tenant, { id: tenantId });
}

/** The tenant entity; throws (MikroORM's NotFoundError) when there is none. */
export async function getTenantEntity(em: EntityManager, tenantId: string): Promise<ITenant> {
  return em.findOneOrFail(Tenant, { id: tenantId });
}

/** The tenant's enabled built-in domains as stored; undefined when there is no such tenant. */
export async function selectEnabledDomains(em: EntityManager, tenantId: string): Promise<string[] | undefined> {
  const tenant = await kyselyOf(em).selectFrom('tenants').select('enabled_domains').where('id', '=', tenantId).executeTakeFirst();
  return tenant?.enabled_domains;
}

export async function tenantExists(em: EntityManager, tenantId: string): Promise<boolean> {
  return Boolean(await em.findOne(Tenant, { id: tenantId }, { fields: ['id'] }));
}

export interface NewTenant {
  name: string;
  type: ITenant['type'];
  plan: ITenant['plan'];
  billingEmail: string | null;
  enabledDomains: string[];
  disabledIntents?: string[];
  defaultModel?: string | null;
  modelFallbacks?: string[] | null;
  monthlyRequestQuota?: number | null;
  monthlyTokenQuota?: string | null;
  isActive?: boolean;
}

/** Inserts the tenant now (with whatever else `em` holds). */
export async function insertTenant(em: EntityManager, values: NewTenant): Promise<ITenant> {
  const tenant = em.create(Tenant, values);
  await em.flush();
  return tenant;
}

/** Writes the changes made to loaded tenants (with whatever else the caller queued, such as its audit entry). */
export async function saveTenantChanges(em: EntityManager): Promise<void> {
  await em.flush();
}

/**
 * Locks the tenant row `for update` until the end of `em`'s transaction: waits for, and holds off,
 * every other path that locks the tenant (key rotation and revocation, role changes).
 */
export async function lockTenantForUpdate(em: EntityManager, tenantId: string): Promise<void> {
  await kyselyOf(em).selectFrom('tenants').select('id').where('id', '=', tenantId).forUpdate().execute();
}

/** Locks the tenant row `for key share`: waits only for a holder of `for update`. */
export async function lockTenantForKeyShare(em: EntityManager, tenantId: string): Promise<void> {
  await kyselyOf(em).selectFrom('tenants').select('id').where('id', '=', tenantId).forKeyShare().execute();
}

/** The tenant's default model and fallback chain (nulls when it has none or there is no such tenant). */
export async function readTenantModelSettings(em: EntityManager, tenantId: string): Promise<{ defaultModel: string | null; modelFallbacks: string[] | null }> {
  const tenant = await kyselyOf(em).selectFrom('tenants').select(['default_model', 'model_fallbacks']).where('id', '=', tenantId).executeTakeFirst();
  return { defaultModel: tenant?.default_model ?? null, modelFallbacks: tenant?.model_fallbacks ?? null };
}
