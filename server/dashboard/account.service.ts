import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { toDashboardUser } from '../auth/auth.service.js';
import type { DashboardScope } from '../auth/authenticate-dashboard.js';
import { getUser } from '../auth/user-records.js';
import { getTenantEntity, updateTenantFields, type TenantChanges } from '../tenants/tenant-records.js';
import { getTenantProfile } from '../tenants/tenants.service.js';

export async function getAccount(em: EntityManager, scope: DashboardScope) {
  const user = await getUser(em, scope.userId);
  return { tenant: await getTenantProfile(em, scope.tenantId), user: toDashboardUser(user) };
}

export async function updateAccount(em: EntityManager, scope: DashboardScope, actor: Actor, input: { tenantName?: string; billingEmail?: string | null }) {
  await em.transactional(async (tx) => {
    const tenant = await getTenantEntity(tx, scope.tenantId);
    const changes: Record<string, unknown> = {};
    const values: TenantChanges = {};
    if (input.tenantName !== undefined && input.tenantName !== tenant.name) {
      changes.tenantName = { from: tenant.name, to: input.tenantName };
      values.name = input.tenantName;
    }
    if (input.billingEmail !== undefined && input.billingEmail !== tenant.billingEmail) {
      changes.billingEmail = { from: tenant.billingEmail, to: input.billingEmail };
      values.billingEmail = input.billingEmail;
    }
    if (Object.keys(changes).length > 0) recordAudit(tx, scope.tenantId, actor, { action: 'account.updated', targetType: 'tenant', targetId: scope.tenantId, details: changes });
    await updateTenantFields(tx, tenant, values);
  });
  return getAccount(em, scope);
}
