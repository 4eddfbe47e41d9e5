import { z } from 'zod';
import { dashboardUserSchema, emailSchema, passwordSchema } from '../auth/auth.schemas.js';
import { ROLES } from '../../db/column-values.js';
import { historyPaginationSchema } from '../common/pagination.js';
import { tenantProfileSchema } from '../tenants/tenants.schemas.js';

export const accountOutput = z.object({ tenant: tenantProfileSchema, user: dashboardUserSchema });
export const accountUpdateInput = z.object({
  tenantName: z.string().trim().min(1).max(200).optional(),
  billingEmail: emailSchema.nullable().optional(),
});

export const inviteInput = z.object({
  email: emailSchema,
  role: z.enum(ROLES),
  password: passwordSchema,
  fullName: z.string().trim().min(1).max(200).optional(),
});

export const environmentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    apiKeyPreview: z.string().nullable(),
    apiKeyLastUsedAt: z.string().nullable(),
    permissions: z.array(z.string()).describe('What the environment\'s keys may do (its own key all of it; a named key within it)'),
    createdAt: z.string(),
  })
  .meta({ id: 'Environment' });
export type EnvironmentDto = z.infer<typeof environmentSchema>;

export const issuedKeySchema = z.object({
  apiKey: z.string().describe('The full key. Shown once: store it now.'),
  apiKeyPreview: z.string().describe('The key masked: first 12 and last 4 characters, as key lists show it.'),
  maskedKey: z.string().describe('The new key masked, the same value as apiKeyPreview (first 12 and last 4 characters): safe to show or log.'),
});
export type IssuedKeyDto = z.infer<typeof issuedKeySchema>;

export const auditEntrySchema = z
  .object({
    id: z.string(),
    actor: z.string().describe('E-mail of the user, `admin`, or `api-key:<key name or environment> (<key preview>)` (actor_id is the key\'s id)'),
    actor_type: z.string(),
    actor_id: z.string().nullable(),
    action: z.string(),
    target_type: z.string(),
    target_id: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
    created_at: z.string(),
  })
  .meta({ id: 'AuditEntry' });
export const auditLogOutput = z.object({ entries: z.array(auditEntrySchema), pagination: historyPaginationSchema });

const usageTotals = { requests: z.number().int(), tokens: z.number().int(), costUsd: z.string() };
export const usageReportSchema = z
  .object({
    from: z.string(),
    to: z.string(),
    totals: z.object(usageTotals),
    days: z.array(z.object({ date: z.string(), ...usageTotals })),
    domains: z.array(z.object({ domain: z.string().nullable(), ...usageTotals })),
    intents: z.array(z.object({ domain: z.string().nullable(), intent: z.string().nullable(), ...usageTotals })),
  })
  .meta({ id: 'UsageReport' });

export const usageQuery = z.object({
  from: z.iso.datetime({ offset: true }).or(z.iso.date()).optional().describe('Start (inclusive); default: first day of this month, UTC'),
  to: z.iso.datetime({ offset: true }).or(z.iso.date()).optional().describe('End (exclusive); default: now'),
});
export { dashboardUserSchema, ROLES };
