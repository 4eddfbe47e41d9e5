import type { EntityManager } from '../../db/orm.js';
import { iso, isoRequired, isUuid, monthKey } from '../common/schemas.js';
import { notFound } from '../errors.js';
import { findProductionKeyPreview } from '../keys/key-records.js';
import { countTenants, selectTenantRow, selectTenantRows, type TenantRow } from './store/tenants.js';
import type { TenantDto, TenantProfileDto } from './tenants.schemas.js';

function toTenantDto(row: TenantRow): TenantDto {
  return {
    id: row.id,
    tenantId: row.id,
    tenantName: row.name,
    tenantType: row.type,
    isActive: row.is_active,
    enabledDomains: row.enabled_domains,
    disabledIntents: row.disabled_intents,
    defaultModel: row.default_model,
    modelFallbacks: row.model_fallbacks,
    billingPlan: row.plan,
    billingEmail: row.billing_email,
    monthlyRequestQuota: row.monthly_request_quota,
    monthlyTokenQuota: row.monthly_token_quota,
    requestsThisMonth: Number(row.requests ?? 0),
    tokensThisMonth: row.tokens ?? '0',
    // The decimal string from the database: no float round trip.
    costThisMonth: row.cost_usd ?? '0.000000',
    hasApiKey: row.has_api_key,
    apiKeyLastUsedAt: iso(row.api_key_last_used_at),
    createdAt: isoRequired(row.created_at),
    updatedAt: isoRequired(row.updated_at),
  };
}

export async function findTenant(em: EntityManager, tenantId: string): Promise<TenantDto | null> {
  if (!isUuid(tenantId)) return null;
  const row = await selectTenantRow(em, tenantId, monthKey());
  return row ? toTenantDto(row) : null;
}

export async function getTenant(em: EntityManager, tenantId: string): Promise<TenantDto> {
  const tenant = await findTenant(em, tenantId);
  if (!tenant) throw notFound('Tenant');
  return tenant;
}

export async function listTenants(em: EntityManager, page: { limit: number; offset: number }) {
  const rows = await selectTenantRows(em, monthKey(), page);
  const total = await countTenants(em);
  return { tenants: rows.map(toTenantDto), pagination: { total, limit: page.limit, offset: page.offset } };
}

export async function getTenantProfile(em: EntityManager, tenantId: string): Promise<TenantProfileDto> {
  const tenant = await getTenant(em, tenantId);
  const keyPreview = await findProductionKeyPreview(em, tenantId);
  return {
    tenantId: tenant.id,
    tenantName: tenant.tenantName,
    billingPlan: tenant.billingPlan,
    billingEmail: tenant.billingEmail,
    monthlyRequestQuota: tenant.monthlyRequestQuota,
    monthlyTokenQuota: tenant.monthlyTokenQuota,
    enabledDomains: tenant.enabledDomains,
    isActive: tenant.isActive,
    apiKeyPreview: keyPreview,
  };
}
