import { z } from 'zod';
import { BILLING_PLANS, TENANT_TYPES } from '../../db/entities/tenant.js';
import { emailSchema } from '../auth/auth.schemas.js';
import { bodyBoolean, bodyInt, envelope, limitOffsetQuery, ok, paginationSchema } from '../common/schemas.js';
import { usageQuery, usageReportSchema, issuedKeySchema } from '../dashboard/dashboard.schemas.js';
import { BUILT_IN_DOMAINS } from '../domains/built-in-domains.js';
import { HIRING_INTENTS } from '../hiring/hiring-intents.js';
import { revokeTenantKeys, rotateTenantKey } from '../keys/keys.service.js';
import { tenantSchema } from '../tenants/tenants.schemas.js';
import { getTenant, listTenants } from '../tenants/tenants.service.js';
import { adminProcedure, router } from '../trpc.js';
import { getPlatformStats, getUsageReport, resolveRange } from '../usage/usage.service.js';
import { assertTenantExists, createTenant, updateTenant } from './admin.service.js';
import { diagnosticsSchema } from './diagnostics.schemas.js';
import { runDiagnostics } from './diagnostics.service.js';

const TAGS = ['Admin'];

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
  monthlyRequestQuota: bodyInt(0, 2_147_483_647).nullable(),
  monthlyTokenQuota: bodyInt(0).nullable(),
};

// Every field is optional on update; tenantName is required on create.
const optionalTenantFields = z.object(tenantFields).partial();
const createTenantInput = optionalTenantFields.extend({ tenantName: tenantFields.tenantName });
const updateTenantInput = optionalTenantFields.extend({ tenantId: z.string().max(64), isActive: bodyBoolean().optional() });

const tenantIdInput = z.object({ tenantId: z.string().max(64) });

export const adminRouter = router({
  listTenants: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/tenants', tags: TAGS, summary: 'List tenants, newest first' } })
    .input(z.object(limitOffsetQuery))
    .output(ok(z.object({ tenants: z.array(tenantSchema), pagination: paginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listTenants(ctx.em, input))),

  createTenant: adminProcedure
    .meta({ openapi: { method: 'POST', path: '/admin/tenants', tags: TAGS, summary: 'Create a tenant with production and development environments; returns the production key once' }, successStatus: 201 })
    .input(createTenantInput)
    .output(ok(z.object({ tenant: tenantSchema, apiKey: z.string() })))
    .mutation(async ({ ctx, input }) => envelope(await createTenant(ctx.em, ctx.actor, input))),

  getTenant: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/tenants/{tenantId}', tags: TAGS, summary: 'One tenant' }, errors: ['NOT_FOUND'] })
    .input(tenantIdInput)
    .output(ok(tenantSchema))
    .query(async ({ ctx, input }) => envelope(await getTenant(ctx.em, input.tenantId))),

  updateTenant: adminProcedure
    .meta({ openapi: { method: 'PATCH', path: '/admin/tenants/{tenantId}', tags: TAGS, summary: 'Update plan, quotas, enabled domains, or activate/deactivate' }, errors: ['NOT_FOUND'] })
    .input(updateTenantInput)
    .output(ok(tenantSchema))
    .mutation(async ({ ctx, input }) => {
      const { tenantId, ...fields } = input;
      return envelope(await updateTenant(ctx.em, ctx.actor, tenantId, fields));
    }),

  rotateTenantKey: adminProcedure
    .meta({ openapi: { method: 'POST', path: '/admin/tenants/{tenantId}/api-key/rotate', tags: TAGS, summary: 'New production key; every other key of the tenant revoked' }, errors: ['NOT_FOUND'] })
    .input(tenantIdInput)
    .output(ok(issuedKeySchema))
    .mutation(async ({ ctx, input }) => {
      await assertTenantExists(ctx.em, input.tenantId);
      return envelope(await rotateTenantKey(ctx.em, input.tenantId, ctx.actor));
    }),

  revokeTenantKeys: adminProcedure
    .meta({ openapi: { method: 'DELETE', path: '/admin/tenants/{tenantId}/api-key', tags: TAGS, summary: 'Revoke every key of the tenant' }, errors: ['NOT_FOUND'] })
    .input(tenantIdInput)
    .output(ok(z.object({ revokedKeys: z.number().int() })))
    .mutation(async ({ ctx, input }) => {
      await assertTenantExists(ctx.em, input.tenantId);
      return envelope({ revokedKeys: await revokeTenantKeys(ctx.em, input.tenantId, ctx.actor) });
    }),

  usage: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/usage', tags: TAGS, summary: 'Usage for one tenant (tenantId) or the whole platform' }, errors: ['NOT_FOUND'] })
    .input(usageQuery.extend({ tenantId: z.string().max(64).optional() }))
    .output(ok(usageReportSchema.extend({ tenantId: z.string().nullable() })))
    .query(async ({ ctx, input }) => {
      if (input.tenantId) await assertTenantExists(ctx.em, input.tenantId);
      const report = await getUsageReport(ctx.em, input.tenantId ?? null, resolveRange(input.from, input.to));
      return envelope({ tenantId: input.tenantId ?? null, ...report });
    }),

  stats: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/stats', tags: TAGS, summary: 'Platform totals' } })
    .input(z.object({}).optional())
    .output(
      ok(
        z.object({
          tenants: z.number().int(),
          activeTenants: z.number().int(),
          users: z.number().int(),
          requestsThisMonth: z.number().int(),
          tokensThisMonth: z.string(),
          costThisMonth: z.string(),
          runsByKind: z.record(z.string(), z.number().int()),
        }),
      ),
    )
    .query(async ({ ctx }) => envelope(await getPlatformStats(ctx.em))),

  diagnostics: adminProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/admin/diagnostics',
        tags: TAGS,
        summary: 'Check the database, migrations, job runner and model provider',
        description: 'Always 200 with `ok: false` when a check fails; each failing or warning check says how to fix it. `liya doctor` prints it.',
      },
    })
    .input(z.object({}).optional())
    .output(ok(diagnosticsSchema))
    .query(async ({ ctx }) => envelope(await runDiagnostics(ctx.deps, ctx.em))),
});
