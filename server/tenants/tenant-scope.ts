// The one tenant scope every service takes: who the work is for. Built once per request by the
// API-key procedure (server/trpc.ts) and, for work no request carries (jobs: webhook, event,
// schedule and async runs, runs continued after a wait), by the loaders below.
import type { SqlPool } from '../../db/sql-pool.js';
import { selectTenantScopeRow, type TenantScopeRow } from './store/tenants.js';
import { toTenantRuntime, type TenantRuntime } from './tenant-runtime.js';

// The columns a query joined to `tenants t` selects for `scopeFromRow` live with the tenants table's statements.
export { TENANT_SCOPE_SELECTION, type TenantScopeRow } from './store/tenants.js';

export interface TenantScope {
  tenantId: string;
  /** The environment of the API key that started the work (null: work no key started, e.g. a webhook). */
  environmentId: string | null;
  /** The billing plan: features and limits (plan-limits.ts). */
  plan: string;
  /** The tenant's runtime settings (domains, models, guardrails, quotas). */
  tenant: TenantRuntime;
}

/** The scope of a row read with TENANT_SCOPE_SELECTION; null when the tenant is inactive. */
export const scopeFromRow = (row: TenantScopeRow, environmentId: string | null): TenantScope | null =>
  row.tenant_is_active ? { tenantId: row.tenant_id, environmentId, tenant: toTenantRuntime(row), plan: row.tenant_plan } : null;

/** Null when the tenant is gone or inactive. */
export async function loadTenantScope(sql: SqlPool, tenantId: string, environmentId: string | null = null): Promise<TenantScope | null> {
  const row = await selectTenantScopeRow(sql, tenantId);
  if (!row || !row.is_active) return null;
  return { tenantId, environmentId, tenant: toTenantRuntime(row), plan: row.plan };
}
