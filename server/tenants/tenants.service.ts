import type { EntityManager } from '../../db/orm.js';
import { iso, isoRequired, isUuid, monthKey } from '../common/schemas.js';
import { notFound } from '../errors.js';
import type { TenantDto, TenantProfileDto } from './tenants.schemas.js';

interface TenantRow {
  id: string;
  name: string;
  type: TenantDto['tenantType'];
  plan: TenantDto['billingPlan'];
  billing_email: string | null;
  is_active: boolean;
  enabled_domains: string[];
  disabled_intents: string[];
  default_model: string | null;
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
const TENANT_SELECT = `
  select t.id, t.name, t.type, t.plan, t.billing_email, t.is_active, t.enabled_domains, t.disabled_intents, t.default_model,
         t.monthly_request_quota, t.monthly_token_quota::text as monthly_token_quota, t.created_at, t.updated_at,
         c.requests::text as requests, c.tokens::text as tokens, round(c.cost_usd, 6)::text as cost_usd,
         exists(select 1 from api_keys k where k.tenant_id = t.id and k.revoked_at is null) as has_api_key,
         (select max(k.last_used_at) from api_keys k where k.tenant_id = t.id) as api_key_last_used_at
    from tenants t
    left join usage_counters c on c.tenant_id = t.id and c.month = ?`;

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
  const rows = await em.execute<TenantRow[]>(`${TENANT_SELECT} where t.id = ?`, [monthKey(), tenantId]);
  return rows[0] ? toTenantDto(rows[0]) : null;
}

export async function getTenant(em: EntityManager, tenantId: string): Promise<TenantDto> {
  const tenant = await findTenant(em, tenantId);
  if (!tenant) throw notFound('Tenant');
  return tenant;
}

export async function listTenants(em: EntityManager, page: { limit: number; offset: number }) {
  const rows = await em.execute<TenantRow[]>(`${TENANT_SELECT} order by t.created_at desc, t.id limit ? offset ?`, [monthKey(), page.limit, page.offset]);
  const [{ total }] = await em.execute<{ total: string }[]>('select count(*)::text as total from tenants');
  return { tenants: rows.map(toTenantDto), pagination: { total: Number(total), limit: page.limit, offset: page.offset } };
}

export async function getTenantProfile(em: EntityManager, tenantId: string): Promise<TenantProfileDto> {
  const tenant = await getTenant(em, tenantId);
  const [key] = await em.execute<{ key_preview: string }[]>(
    `select k.key_preview from api_keys k join environments e on e.id = k.environment_id
      where k.tenant_id = ? and e.name = 'production' and k.revoked_at is null order by k.created_at desc limit 1`,
    [tenantId],
  );
  return {
    tenantId: tenant.id,
    tenantName: tenant.tenantName,
    billingPlan: tenant.billingPlan,
    billingEmail: tenant.billingEmail,
    monthlyRequestQuota: tenant.monthlyRequestQuota,
    monthlyTokenQuota: tenant.monthlyTokenQuota,
    enabledDomains: tenant.enabledDomains,
    isActive: tenant.isActive,
    apiKeyPreview: key?.key_preview ?? null,
  };
}
