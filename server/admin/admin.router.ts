import { z } from 'zod';
import { envelope, limitOffsetQuery, ok, paginationSchema } from '../common/schemas.js';
import { tenantSchema } from '../tenants/tenants.schemas.js';
import { getTenant, listTenants } from '../tenants/tenants.service.js';
import { deleteTenant, TENANT_DELETION_NOTE } from '../tenants/delete-tenant.js';
import { listPlatformAudit } from '../tenants/platform-audit.js';
import { deleteTenantInput, deletionReceiptSchema, platformAuditOutput, platformAuditQuery } from '../tenants/tenant-data.schemas.js';
import { adminProcedure, router } from '../trpc.js';
import { getPlatformStats, USAGE_REPORT_NOTE } from '../usage/usage.service.js';
import { createTenantInput, issuedKeySchema, tenantIdInput, updateTenantInput, usageQuery, usageReportSchema } from './admin.schemas.js';
import { createTenant, getTenantUsage, revokeTenantApiKeys, rotateTenantApiKey, updateTenant } from './admin.service.js';
import { diagnosticsSchema } from './diagnostics.schemas.js';
import { runDiagnostics } from './diagnostics.service.js';

const TAGS = ['Admin'];

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
    .mutation(async ({ ctx, input }) => envelope(await rotateTenantApiKey(ctx.em, ctx.actor, input.tenantId))),

  revokeTenantKeys: adminProcedure
    .meta({ openapi: { method: 'DELETE', path: '/admin/tenants/{tenantId}/api-key', tags: TAGS, summary: 'Revoke every key of the tenant' }, errors: ['NOT_FOUND'] })
    .input(tenantIdInput)
    .output(ok(z.object({ revokedKeys: z.number().int() })))
    .mutation(async ({ ctx, input }) => envelope(await revokeTenantApiKeys(ctx.em, ctx.actor, input.tenantId))),

  deleteTenant: adminProcedure
    .meta({
      openapi: { method: 'DELETE', path: '/admin/tenants/{tenantId}', tags: TAGS, summary: 'Delete a tenant and everything it owns, for good; answers a receipt', description: TENANT_DELETION_NOTE },
      errors: ['NOT_FOUND', 'RUNS_IN_FLIGHT', 'CONFLICT'],
    })
    .input(deleteTenantInput)
    .output(ok(deletionReceiptSchema))
    .mutation(async ({ ctx, input }) => envelope(await deleteTenant(ctx.deps, input.tenantId, { force: input.force, actor: ctx.actor }))),

  platformAuditLog: adminProcedure
    .meta({
      openapi: {
        method: 'GET', path: '/admin/audit-log', tags: TAGS, summary: 'The operator\'s audit log: tenants deleted (with their receipts), exported and imported',
        description: 'Newest first. Outside every tenant: an entry outlives the tenant it names. Actions: tenant.delete_started, tenant.deleted (details: the receipt), tenant.exported, tenant.imported. Paged like every history list (page/pageSize or cursor).',
      },
    })
    .input(platformAuditQuery)
    .output(ok(platformAuditOutput))
    .query(async ({ ctx, input }) => envelope(await listPlatformAudit(ctx.em, input))),

  usage: adminProcedure
    .meta({ openapi: { method: 'GET', path: '/admin/usage', tags: TAGS, summary: 'Usage for one tenant (tenantId) or the whole platform', description: USAGE_REPORT_NOTE }, errors: ['NOT_FOUND'] })
    .input(usageQuery.extend({ tenantId: z.string().max(64).optional() }))
    .output(ok(usageReportSchema.extend({ tenantId: z.string().nullable() })))
    .query(async ({ ctx, input }) => envelope(await getTenantUsage(ctx.em, input))),

  stats: adminProcedure
    .meta({
      openapi: {
        method: 'GET', path: '/admin/stats', tags: TAGS, summary: 'Platform totals',
        description:
          "Tenants, active tenants and users; this UTC month's requests, tokens and cost from the monthly counters; `runsByKind`: " +
          "this UTC month's usage events per kind from the daily usage totals. Neither depends on retention: monthly and daily totals are never deleted.",
      },
    })
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
