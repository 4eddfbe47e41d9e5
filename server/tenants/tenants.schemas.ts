import { z } from 'zod';
import { BILLING_PLANS, TENANT_TYPES } from '../../db/column-values.js';

export const tenantSchema = z
  .object({
    id: z.string(),
    tenantId: z.string().describe('Same value as id (both names are used by clients).'),
    tenantName: z.string(),
    tenantType: z.enum(TENANT_TYPES),
    isActive: z.boolean(),
    enabledDomains: z.array(z.string()),
    disabledIntents: z.array(z.string()).describe('Built-in intents switched off, as domain/intent (403 INTENT_NOT_PERMITTED)'),
    defaultModel: z.string().nullable().describe('Model used when an intent names none (null: the platform default)'),
    modelFallbacks: z.array(z.string()).nullable().describe('Fallback chain for calls whose intent, agent or suite names none (null: the platform\'s LLM_FALLBACK_MODELS; []: never fall back)'),
    billingPlan: z.enum(BILLING_PLANS),
    billingEmail: z.string().nullable(),
    monthlyRequestQuota: z.number().int().nullable(),
    monthlyTokenQuota: z.string().nullable().describe('Integer as a string (64-bit).'),
    requestsThisMonth: z.number().int(),
    tokensThisMonth: z.string(),
    costThisMonth: z.string().describe('USD, decimal with 6 places.'),
    hasApiKey: z.boolean(),
    apiKeyLastUsedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Tenant' });
export type TenantDto = z.infer<typeof tenantSchema>;

export const tenantProfileSchema = z
  .object({
    tenantId: z.string(),
    tenantName: z.string(),
    billingPlan: z.enum(BILLING_PLANS),
    billingEmail: z.string().nullable(),
    monthlyRequestQuota: z.number().int().nullable(),
    monthlyTokenQuota: z.string().nullable(),
    enabledDomains: z.array(z.string()),
    isActive: z.boolean(),
    apiKeyPreview: z.string().nullable().describe('Preview of the production key: first 12 and last 4 characters.'),
  })
  .meta({ id: 'TenantProfile' });
export type TenantProfileDto = z.infer<typeof tenantProfileSchema>;

export const tenantRefSchema = z.object({ tenantId: z.string(), tenantName: z.string(), plan: z.enum(BILLING_PLANS) }).meta({ id: 'TenantRef' });
