import { z } from 'zod';
import { emailSchema } from '../auth/auth.schemas.js';
import { bodyBoolean, bodyInt } from '../common/schemas.js';
import { BUILT_IN_DOMAINS } from '../domains/built-in-domains.js';
import { HIRING_INTENTS } from '../hiring/hiring-intents.js';
import { BILLING_PLANS, TENANT_TYPES } from '../../db/column-values.js';
import { fallbackModelsSchema } from '../llm/llm.schemas.js';

export { issuedKeySchema, usageQuery, usageReportSchema } from '../dashboard/dashboard.schemas.js';

const tenantFields = {
  tenantName: z.string().trim().min(1).max(200),
  tenantType: z.enum(TENANT_TYPES),
  billingPlan: z.enum(BILLING_PLANS),
  billingEmail: emailSchema.nullable(),
  enabledDomains: z.array(z.enum(BUILT_IN_DOMAINS)).max(50).transform((d) => [...new Set(d)]),
  disabledIntents: z
    .array(z.string().refine((id) => HIRING_INTENTS.some((i) => i.id === id), 'Not a built-in intent (use domain/intent, e.g. hiring/cover-letter)'))
    .max(200)
    .transform((d) => [...new Set(d)]),
  defaultModel: z.string().trim().min(1).max(200).nullable(),
  modelFallbacks: fallbackModelsSchema.nullable().describe('The tenant\'s fallback chain for calls whose intent, agent or suite names none (null: the platform\'s LLM_FALLBACK_MODELS; []: never fall back)'),
  monthlyRequestQuota: bodyInt(0, 2_147_483_647).nullable(),
  monthlyTokenQuota: bodyInt(0).nullable(),
};

// Every field is optional on update; tenantName is required on create.
const optionalTenantFields = z.object(tenantFields).partial();
export const createTenantInput = optionalTenantFields.extend({ tenantName: tenantFields.tenantName });
export const updateTenantInput = optionalTenantFields.extend({ tenantId: z.string().max(64), isActive: bodyBoolean().optional() });

export const tenantIdInput = z.object({ tenantId: z.string().max(64) });
