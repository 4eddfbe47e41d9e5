import type { GuardrailsConfig } from '../guardrails/guardrails.types.js';

/** What the intent runtime needs to know about the calling tenant (read with its API key). */
export interface TenantRuntime {
  id: string;
  enabledDomains: string[];
  disabledIntents: string[];
  defaultModel: string | null;
  guardrailsConfig: GuardrailsConfig | null;
  monthlyRequestQuota: number | null;
  monthlyTokenQuota: number | null;
}

/** The columns of `tenants t` that make a TenantRuntime, for queries that already join the tenant. */
export const TENANT_RUNTIME_COLUMNS = `t.id as tenant_id, t.enabled_domains, t.disabled_intents, t.default_model, t.guardrails_config,
  t.monthly_request_quota, t.monthly_token_quota::text as monthly_token_quota`;

export interface TenantRuntimeRow {
  tenant_id: string;
  enabled_domains: string[];
  disabled_intents: string[] | null;
  default_model: string | null;
  guardrails_config: GuardrailsConfig | null;
  monthly_request_quota: number | null;
  monthly_token_quota: string | null;
}

export const toTenantRuntime = (row: TenantRuntimeRow): TenantRuntime => ({
  id: row.tenant_id,
  enabledDomains: row.enabled_domains,
  disabledIntents: row.disabled_intents ?? [],
  defaultModel: row.default_model,
  guardrailsConfig: row.guardrails_config,
  monthlyRequestQuota: row.monthly_request_quota,
  monthlyTokenQuota: row.monthly_token_quota == null ? null : Number(row.monthly_token_quota),
});
