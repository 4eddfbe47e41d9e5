// The tenant scope a run executes in when no API request carries it (jobs: webhook, event,
// schedule and async runs, and runs continued after a wait).
import type { AgentRunScope } from '../agents/run-agent.js';
import type { AppDeps } from '../deps.js';
import { TENANT_RUNTIME_COLUMNS, toTenantRuntime, type TenantRuntimeRow } from '../tenants/tenant-runtime.js';

/** The columns `scopeFromRow` needs, for a query joined to `tenants t`. */
export const RUN_SCOPE_COLUMNS = `t.is_active as tenant_is_active, t.plan as tenant_plan, ${TENANT_RUNTIME_COLUMNS}`;
export type RunScopeRow = TenantRuntimeRow & { tenant_is_active: boolean; tenant_plan: string };

/** Null when the tenant is inactive. */
export const scopeFromRow = (row: RunScopeRow, environmentId: string | null): AgentRunScope | null =>
  row.tenant_is_active ? { tenantId: row.tenant_id, environmentId, tenant: toTenantRuntime(row), plan: row.tenant_plan } : null;

/** Null when the tenant is gone or inactive. */
export async function loadRunScope(deps: AppDeps, tenantId: string, environmentId: string | null = null): Promise<AgentRunScope | null> {
  const [row] = await deps.sql.query<TenantRuntimeRow & { is_active: boolean; plan: string }>(
    `select t.is_active, t.plan, ${TENANT_RUNTIME_COLUMNS} from tenants t where t.id = $1`,
    [tenantId],
    'liya_run_scope',
  );
  if (!row || !row.is_active) return null;
  return { tenantId, environmentId, tenant: toTenantRuntime(row), plan: row.plan };
}
