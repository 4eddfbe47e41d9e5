import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit, recordAuditNow } from '../audit/audit.service.js';
import { isUuid } from '../common/schemas.js';
import { notFound } from '../errors.js';
import { createDefaultEnvironments, revokeTenantKeys, rotateTenantKey } from '../keys/keys.service.js';
import { findTenantEntity, insertTenant, tenantExists, updateTenantFields, type TenantChanges } from '../tenants/tenant-records.js';
import { getTenant } from '../tenants/tenants.service.js';
import { getUsageReport, resolveRange } from '../usage/usage.service.js';

export interface TenantFields {
  tenantName?: string;
  tenantType?: TenantChanges['type'];
  billingPlan?: TenantChanges['plan'];
  billingEmail?: string | null;
  enabledDomains?: string[];
  disabledIntents?: string[];
  defaultModel?: string | null;
  modelFallbacks?: string[] | null;
  monthlyRequestQuota?: number | null;
  monthlyTokenQuota?: number | null;
  isActive?: boolean;
}

/** Creates a tenant with the production and development environments; returns the production key once. */
export async function createTenant(em: EntityManager, actor: Actor, input: TenantFields & { tenantName: string }) {
  const { tenantId, apiKey } = await em.transactional(async (tx) => {
    const tenant = await insertTenant(tx, {
      name: input.tenantName,
      type: input.tenantType ?? 'trial',
      plan: input.billingPlan ?? 'trial',
      billingEmail: input.billingEmail ?? null,
      enabledDomains: input.enabledDomains ?? ['hiring'],
      disabledIntents: input.disabledIntents ?? [],
      defaultModel: input.defaultModel ?? null,
      modelFallbacks: input.modelFallbacks ?? null,
      monthlyRequestQuota: input.monthlyRequestQuota ?? null,
      monthlyTokenQuota: input.monthlyTokenQuota == null ? null : String(input.monthlyTokenQuota),
      isActive: input.isActive ?? true,
    });
    const production = await createDefaultEnvironments(tx, tenant.id);
    await recordAuditNow(tx, tenant.id, actor, { action: 'tenant.created', targetType: 'tenant', targetId: tenant.id, details: { tenantName: tenant.name } });
    return { tenantId: tenant.id, apiKey: production.apiKey };
  });
  return { tenant: await getTenant(em, tenantId), apiKey };
}

export async function updateTenant(em: EntityManager, actor: Actor, tenantId: string, input: TenantFields) {
  if (!isUuid(tenantId)) throw notFound('Tenant');
  await em.transactional(async (tx) => {
    const tenant = await findTenantEntity(tx, tenantId);
    if (!tenant) throw notFound('Tenant');
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    const values: TenantChanges = {};
    const set = <K extends keyof TenantChanges>(field: string, key: K, value: TenantChanges[K] | undefined) => {
      if (value === undefined || JSON.stringify(tenant[key]) === JSON.stringify(value)) return;
      changes[field] = { from: tenant[key], to: value };
      values[key] = value;
    };
    set('tenantName', 'name', input.tenantName);
    set('tenantType', 'type', input.tenantType);
    set('billingPlan', 'plan', input.billingPlan);
    set('billingEmail', 'billingEmail', input.billingEmail);
    set('enabledDomains', 'enabledDomains', input.enabledDomains);
    set('disabledIntents', 'disabledIntents', input.disabledIntents);
    set('defaultModel', 'defaultModel', input.defaultModel);
    set('modelFallbacks', 'modelFallbacks', input.modelFallbacks);
    set('monthlyRequestQuota', 'monthlyRequestQuota', input.monthlyRequestQuota);
    set('monthlyTokenQuota', 'monthlyTokenQuota', input.monthlyTokenQuota === undefined ? undefined : input.monthlyTokenQuota === null ? null : String(input.monthlyTokenQuota));
    set('isActive', 'isActive', input.isActive);
    if (Object.keys(changes).length > 0) {
      const action = changes.isActive ? (input.isActive ? 'tenant.activated' : 'tenant.deactivated') : 'tenant.updated';
      recordAudit(tx, tenantId, actor, { action, targetType: 'tenant', targetId: tenantId, details: changes });
    }
    await updateTenantFields(tx, tenant, values);
  });
  return getTenant(em, tenantId);
}

async function assertTenantExists(em: EntityManager, tenantId: string) {
  if (!isUuid(tenantId) || !(await tenantExists(em, tenantId))) throw notFound('Tenant');
}

/** A new production key for the tenant; every other key of the tenant revoked. */
export async function rotateTenantApiKey(em: EntityManager, actor: Actor, tenantId: string) {
  await assertTenantExists(em, tenantId);
  return rotateTenantKey(em, tenantId, actor);
}

/** Revokes every key of the tenant. */
export async function revokeTenantApiKeys(em: EntityManager, actor: Actor, tenantId: string) {
  await assertTenantExists(em, tenantId);
  return { revokedKeys: await revokeTenantKeys(em, tenantId, actor) };
}

/** Usage of one tenant (tenantId) or of the whole platform, in the range (default: this month). */
export async function getTenantUsage(em: EntityManager, input: { tenantId?: string; from?: string; to?: string }) {
  if (input.tenantId) await assertTenantExists(em, input.tenantId);
  const report = await getUsageReport(em, input.tenantId ?? null, resolveRange(input.from, input.to));
  return { tenantId: input.tenantId ?? null, ...report };
}
