// The one tenant scope every service takes: who the work is for. Built once per request by the
// API-key procedure (server/trpc.ts) and, for work no request carries (jobs: webhook, event,
// schedule and async runs, runs continued after a wait), by the loaders below.
import type { SqlPool } from '../../db/sql-pool.js';
import { TENANT_RUNTIME_COLUMNS, toTenantRuntime, type TenantRuntime, type TenantRuntimeRow } from './tenant-runtime.js';

export interface TenantScope {
  tenantId: string;
  /** The environment of the API key that started the work (null: work no key started, e.g. a webhook). */
  environmentId: string | null;
  /** The billing plan: features and limits (plan-limits.ts). */
  plan: string;
  /** The tenant's runtime settings (domains, models, guardrails, quotas). */
  tenant: TenantRuntime;
}

/** The columns `scopeFromRow` needs, for a query joined to `tenants t`. */
export const TENANT_SCOPE_COLUMNS = `t.is_active as tenant_is_active, t.plan as tenant_plan, ${TENANT_RUNTIME_COLUMNS}`;
export type TenantScopeRow = TenantRuntimeRow & { tenant_is_active: boolean; tenant_plan: string };

/** The scope of a row read with TENANT_SCOPE_COLUMNS; null when the tenant is inactive. */
export const scopeFromRow = (row: TenantScopeRow, environmentId: string | null): TenantScope | null =>
  row.tenant_is_active ? { tenantId: row.tenant_id, environmentId, tenant: toTenantRuntime(row), plan: row.tenant_plan } : null;

/** Null when the tenant is gone or inactive. */
export async function loadTenantScope(sql: SqlPool, tenantId: string, environmentId: string | null = null): Promise<TenantScope | null> {
  const [row] = await sql.query<TenantRuntimeRow & { is_active: boolean; plan: string }>(
    `select t.is_active, t.plan, ${TENANT_RUNTIME_COLUMNS} from tenants t where t.id = $1`,
    [tenantId],
    'liya_run_scope',
  );
  if (!row || !row.is_active) return null;
  return { tenantId, environmentId, tenant: toTenantRuntime(row), plan: row.plan };
}
