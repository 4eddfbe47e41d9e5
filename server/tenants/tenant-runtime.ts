import type { GuardrailsConfig } from '../guardrails/guardrails.types.js';
import type { TenantRuntimeRow } from './store/tenants.js';

// The columns and row of a TenantRuntime live with the tenants table's statements.
export { TENANT_RUNTIME_COLUMNS, type TenantRuntimeRow } from './store/tenants.js';

/** What the intent runtime needs to know about the calling tenant (read with its API key). */
export interface TenantRuntime {
  id: string;
  enabledDomains: string[];
  disabledIntents: string[];
  defaultModel: string | null;
  /** The tenant's fallback chain (null: the platform's). */
  modelFallbacks: string[] | null;
  guardrailsConfig: GuardrailsConfig | null;
  monthlyRequestQuota: number | null;
  monthlyTokenQuota: number | null;
}

export const toTenantRuntime = (row: TenantRuntimeRow): TenantRuntime => ({
  id: row.tenant_id,
  enabledDomains: row.enabled_domains,
  disabledIntents: row.disabled_intents ?? [],
  defaultModel: row.default_model,
  modelFallbacks: row.model_fallbacks,
  guardrailsConfig: row.guardrails_config,
  monthlyRequestQuota: row.monthly_request_quota,
  monthlyTokenQuota: row.monthly_token_quota == null ? null : Number(row.monthly_token_quota),
});
