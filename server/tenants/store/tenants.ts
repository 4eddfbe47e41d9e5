// The tenants table; this module alone writes it.
import { sql as kysql } from 'kysely';
import { Tenant, type ITenant } from '../../../db/entities/tenant.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, statement } from '../../../db/statements.js';
import type { GuardrailsConfig } from '../../guardrails/guardrails.types.js';

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

/** What `scopeFromRow` reads of a row selected with TENANT_SCOPE_SELECTION. */
export type TenantScopeRow = TenantRuntimeRow & { tenant_is_active: boolean; tenant_plan: string };

/** TENANT_RUNTIME_COLUMNS for a Kysely select from `tenants as t`. */
const TENANT_RUNTIME_SELECTION = [
  't.id as tenant_id',
  't.enabled_domains',
  't.disabled_intents',
  't.default_model',
  't.model_fallbacks',
  't.guardrails_config',
  't.monthly_request_quota',
  kysql<string | null>`${kysql.ref('t.monthly_token_quota')}::text`.as('monthly_token_quota'),
] as const;

/** The columns `scopeFromRow` needs, for a Kysely statement joined to `tenants as t`. */
export const TENANT_SCOPE_SELECTION = ['t.is_active as tenant_is_active', 't.plan as tenant_plan', ...TENANT_RUNTIME_SELECTION] as const;

// On the run path: one named prepared statement on the SqlPool.
const SELECT_SCOPE = statement<{ tenantId: string }>()('liya_run_scope', (p) =>
  build
    .selectFrom('tenants as t')
    .select(['t.is_active', 't.plan', ...TENANT_RUNTIME_SELECTION])
    .where('t.id', '=', p.tenantId),
).as<TenantRuntimeRow & { is_active: boolean; plan: string }>();

/** The tenant's state and runtime settings; undefined when there is no such tenant. */
export async function selectTenantScopeRow(sql: SqlPool, tenantId: string): Promise<(TenantRuntimeRow & { is_active: boolean; plan: string }) | undefined> {
  const [row] = await SELECT_SCOPE.run(sql, { tenantId });
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

/**
 * Tenants with the counters of `month` and key facts, in one statement. The bigint and numeric
 * columns are cast to text (and the cost rounded) in SQL so the strings stay exactly as PostgreSQL
 * writes them.
 */
function tenantRows(em: EntityManager, month: string) {
  const text = (column: string) => kysql<string | null>`${kysql.ref(column)}::text`;
  return kyselyOf(em)
    .selectFrom('tenants as t')
    .leftJoin('usage_counters as c', (join) => join.onRef('c.tenant_id', '=', 't.id').on('c.month', '=', month))
    .select((eb) => [
      't.id', 't.name', 't.type', 't.plan', 't.billing_email', 't.is_active', 't.enabled_domains', 't.disabled_intents', 't.default_model', 't.model_fallbacks',
      't.monthly_request_quota', text('t.monthly_token_quota').as('monthly_token_quota'), 't.created_at', 't.updated_at',
      text('c.requests').as('requests'), text('c.tokens').as('tokens'), kysql<string | null>`round(${kysql.ref('c.cost_usd')}, 6)::text`.as('cost_usd'),
      eb.exists(eb.selectFrom('api_keys as k').select(kysql.lit(1).as('one')).whereRef('k.tenant_id', '=', 't.id').where('k.revoked_at', 'is', null)).as('has_api_key'),
      eb.selectFrom('api_keys as k').select((k) => k.fn.max('k.last_used_at').as('last_used_at')).whereRef('k.tenant_id', '=', 't.id').as('api_key_last_used_at'),
    ]);
}

/** The tenant with the counters of `month` (YYYY-MM); undefined when there is none. */
export async function selectTenantRow(em: EntityManager, tenantId: string, month: string): Promise<TenantRow | undefined> {
  const row = await tenantRows(em, month).where('t.id', '=', tenantId).executeTakeFirst();
  return row as TenantRow | undefined;
}

/** One page of tenants, newest first, with the counters of `month`. */
export async function selectTenantRows(em: EntityManager, month: string, page: { limit: number; offset: number }): Promise<TenantRow[]> {
  const rows = await tenantRows(em, month).orderBy('t.created_at', 'desc').orderBy('t.id').limit(page.limit).offset(page.offset).execute();
  return rows as TenantRow[];
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

/** The tenant's settable fields. */
export type TenantChanges = Partial<
  Pick<ITenant, 'name' | 'type' | 'plan' | 'billingEmail' | 'enabledDomains' | 'disabledIntents' | 'defaultModel' | 'modelFallbacks' | 'monthlyRequestQuota' | 'monthlyTokenQuota' | 'isActive' | 'guardrailsConfig' | 'onlineJudgeBudgetUsd'>
>;

/** Sets `changes` on the loaded tenant and writes them (with whatever else the caller queued, such as its audit entry). */
export async function updateTenantFields(em: EntityManager, tenant: ITenant, changes: TenantChanges): Promise<void> {
  Object.assign(tenant, changes);
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
