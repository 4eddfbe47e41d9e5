import { z } from 'zod';
import { listAuditLog } from '../audit/audit.service.js';
import { HISTORY_LIST_NOTE, historyPageQuery } from '../common/pagination.js';
import { envelope, ok, okEmpty, pageQuery, pageToLimitOffset, paginationSchema } from '../common/schemas.js';
import { dashboardProcedure, router } from '../trpc.js';
import { describeOtherGrowingTables, describeRetention } from '../retention/retention-policy.js';
import { retentionSchema, retentionUpdateInput } from '../retention/retention.schemas.js';
import { getTenantRetention, updateTenantRetention } from '../retention/retention.service.js';
import { getUsageReport, resolveRange, USAGE_REPORT_NOTE } from '../usage/usage.service.js';
import { getAccount, updateAccount } from './account.service.js';
import {
  accountOutput, accountUpdateInput, auditLogOutput, dashboardUserSchema, environmentSchema, inviteInput, issuedKeySchema, ROLES, usageQuery, usageReportSchema,
} from './dashboard.schemas.js';
import { createEnvironment, listEnvironments, rotateEnvironmentKey, rotateTenantKey } from './environments.service.js';
import { createdKeySchema, createKeyInput, environmentPermissionsInput, keyListSchema, permissionCatalog, permissionCatalogSchema } from '../keys/keys.schemas.js';
import { createNamedKey, listApiKeys, MAX_NAMED_KEYS, revokeApiKey, setEnvironmentPermissions } from '../keys/named-keys.service.js';
import { changeUserRole, inviteUser, listUsers, removeUser } from './users.service.js';

const ACCOUNT = ['Dashboard account'];
const KEYS = ['API keys and permissions'];
const RETENTION = ['Retention'];
const RETENTION_NOTE = `An hourly job deletes history older than the tenant's days, in small batches, and drops whole months of usage events and session messages that every plan's retention has passed. Monthly usage totals are never deleted. Rows of the hiring domain are kept at least \`hiring_floor_days\` (HIRING_RETENTION_FLOOR_DAYS, default 183: the EU AI Act's six months), whatever the tenant sets. The plans' days (the operator may change them with RETENTION_DAYS):

${describeRetention()}

Other tables that grow are bounded elsewhere:

${describeOtherGrowingTables()}`;
const SAVE_KEY_MESSAGE = 'Save this API key now: it is shown only once. The previous key stopped working.';
const rotateOutput = z.object({ success: z.literal(true), data: issuedKeySchema, message: z.string() });

export const dashboardRouter = router({
  getAccount: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/account', tags: ACCOUNT, summary: 'Tenant profile and the current user' } })
    .input(z.object({}).optional())
    .output(ok(accountOutput))
    .query(async ({ ctx }) => envelope(await getAccount(ctx.em, ctx.user))),

  updateAccount: dashboardProcedure('admin')
    .meta({ openapi: { method: 'PATCH', path: '/dashboard/account', tags: ACCOUNT, summary: 'Rename the tenant or change the billing e-mail (owner/admin)' } })
    .input(accountUpdateInput)
    .output(ok(accountOutput))
    .mutation(async ({ ctx, input }) => envelope(await updateAccount(ctx.em, ctx.user, ctx.actor, input))),

  listUsers: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/users', tags: ACCOUNT, summary: 'Users of the tenant, oldest first; paged by page and pageSize' } })
    .input(z.object(pageQuery))
    .output(ok(z.object({ users: z.array(dashboardUserSchema), pagination: paginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listUsers(ctx.em, ctx.tenantId, pageToLimitOffset(input.page, input.pageSize)))),

  inviteUser: dashboardProcedure('admin')
    .meta({ openapi: { method: 'POST', path: '/dashboard/users', tags: ACCOUNT, summary: 'Add a user with an initial password (owner/admin; only owners grant owner)' }, successStatus: 201, errors: ['EMAIL_TAKEN'] })
    .input(inviteInput)
    .output(ok(z.object({ user: dashboardUserSchema })))
    .mutation(async ({ ctx, input }) => envelope(await inviteUser(ctx.em, ctx.user, ctx.actor, input))),

  changeUserRole: dashboardProcedure('admin')
    .meta({ openapi: { method: 'PATCH', path: '/dashboard/users/{id}', tags: ACCOUNT, summary: 'Change a user\'s role (owner/admin); the last owner stays' }, errors: ['NOT_FOUND', 'LAST_OWNER'] })
    .input(z.object({ id: z.string().max(64), role: z.enum(ROLES) }))
    .output(ok(z.object({ user: dashboardUserSchema })))
    .mutation(async ({ ctx, input }) => envelope(await changeUserRole(ctx.em, ctx.user, ctx.actor, input.id, input.role))),

  removeUser: dashboardProcedure('admin')
    .meta({ openapi: { method: 'DELETE', path: '/dashboard/users/{id}', tags: ACCOUNT, summary: 'Remove a user (owner/admin); the last owner stays' }, errors: ['NOT_FOUND', 'LAST_OWNER'] })
    .input(z.object({ id: z.string().max(64) }))
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await removeUser(ctx.em, ctx.user, ctx.actor, input.id);
      return { success: true as const };
    }),

  listEnvironments: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/environments', tags: ACCOUNT, summary: 'Environments with their key preview and last use' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ environments: z.array(environmentSchema) })))
    .query(async ({ ctx }) => envelope(await listEnvironments(ctx.em, ctx.tenantId))),

  createEnvironment: dashboardProcedure('admin')
    .meta({ openapi: { method: 'POST', path: '/dashboard/environments', tags: ACCOUNT, summary: 'Create an environment with its own API key (shown once)' }, successStatus: 201, errors: ['CONFLICT'] })
    .input(z.object({ name: z.string().trim().min(1).max(64).regex(/^[a-z0-9_-]+$/, 'Use lower-case letters, digits, - and _') }))
    .output(ok(z.object({ environment: environmentSchema, apiKey: z.string() })))
    .mutation(async ({ ctx, input }) => envelope(await createEnvironment(ctx.em, ctx.tenantId, ctx.actor, input.name))),

  rotateEnvironmentKey: dashboardProcedure('admin')
    .meta({ openapi: { method: 'POST', path: '/dashboard/environments/{id}/api-key/rotate', tags: ACCOUNT, summary: 'Replace one environment\'s key; the old key is invalid immediately' }, errors: ['NOT_FOUND'] })
    .input(z.object({ id: z.string().max(64) }))
    .output(rotateOutput)
    .mutation(async ({ ctx, input }) => ({ success: true as const, data: await rotateEnvironmentKey(ctx.em, ctx.tenantId, input.id, ctx.actor), message: SAVE_KEY_MESSAGE })),

  setEnvironmentPermissions: dashboardProcedure('admin')
    .meta({
      openapi: {
        method: 'PATCH', path: '/dashboard/environments/{id}/permissions', tags: KEYS, summary: 'Set what the environment\'s keys may do (owner/admin)',
        description: 'A `preset` or a list of `permissions` (null: every permission, the default). Bounds every key of the environment at once: its own key holds exactly these; a named key holds its own within these.',
      },
      errors: ['NOT_FOUND'],
    })
    .input(environmentPermissionsInput)
    .output(ok(z.object({ permissions: z.array(z.string()) })))
    .mutation(async ({ ctx, input }) => envelope({ permissions: await setEnvironmentPermissions(ctx.em, ctx.tenantId, ctx.actor, input.id, input) })),

  permissionCatalog: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/permissions', tags: KEYS, summary: 'Every API-key permission and the presets' } })
    .input(z.object({}).optional())
    .output(ok(permissionCatalogSchema))
    .query(() => envelope(permissionCatalog())),

  listApiKeys: dashboardProcedure('admin')
    .meta({ openapi: { method: 'GET', path: '/dashboard/api-keys', tags: KEYS, summary: 'The tenant\'s keys that are not revoked: environment keys, then named keys (owner/admin)' } })
    .input(z.object({}).optional())
    .output(ok(keyListSchema))
    .query(async ({ ctx }) => envelope(await listApiKeys(ctx.em, ctx.tenantId))),

  createApiKey: dashboardProcedure('admin')
    .meta({
      openapi: {
        method: 'POST', path: '/dashboard/api-keys', tags: KEYS, summary: 'Create a named key with a preset or a list of permissions (shown once; owner/admin)',
        description: `The key's permissions must lie within its environment's (400 INVALID_INPUT otherwise). At most ${MAX_NAMED_KEYS} named keys a tenant (409 CONFLICT). A name taken by a key that is not revoked: 409 KEY_NAME_TAKEN.`,
      },
      successStatus: 201,
      errors: ['KEY_NAME_TAKEN', 'CONFLICT'],
    })
    .input(createKeyInput)
    .output(ok(createdKeySchema))
    .mutation(async ({ ctx, input }) => envelope(await createNamedKey(ctx.em, ctx.tenantId, ctx.actor, input))),

  revokeApiKey: dashboardProcedure('admin')
    .meta({
      openapi: { method: 'DELETE', path: '/dashboard/api-keys/{id}', tags: KEYS, summary: 'Revoke a named key, by id or name (owner/admin); it answers 401 API_KEY_REVOKED at once' },
      errors: ['NOT_FOUND'],
    })
    .input(z.object({ id: z.string().min(1).max(64) }))
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await revokeApiKey(ctx.em, ctx.tenantId, ctx.actor, input.id);
      return { success: true as const };
    }),

  rotateTenantKey: dashboardProcedure('admin')
    .meta({ openapi: { method: 'POST', path: '/dashboard/api-key/rotate', tags: ACCOUNT, summary: 'Legacy tenant-wide rotation: a new production key, every other key revoked' } })
    .input(z.object({}).optional())
    .output(rotateOutput)
    .mutation(async ({ ctx }) => ({ success: true as const, data: await rotateTenantKey(ctx.em, ctx.tenantId, ctx.actor), message: SAVE_KEY_MESSAGE })),

  usage: dashboardProcedure()
    .meta({
      openapi: {
        method: 'GET', path: '/dashboard/usage', tags: ['Dashboard usage'], summary: 'Usage totals and per-day, per-domain, per-intent rows',
        description: USAGE_REPORT_NOTE,
      },
    })
    .input(usageQuery)
    .output(ok(usageReportSchema))
    .query(async ({ ctx, input }) => envelope(await getUsageReport(ctx.em, ctx.tenantId, resolveRange(input.from, input.to)))),

  getRetention: dashboardProcedure()
    .meta({
      openapi: {
        method: 'GET', path: '/dashboard/retention', tags: RETENTION, summary: 'How long each kind of history is kept, with the plan\'s bounds',
        description: RETENTION_NOTE,
      },
    })
    .input(z.object({}).optional())
    .output(ok(retentionSchema))
    .query(async ({ ctx }) => envelope(await getTenantRetention(ctx.em, ctx.deps.config, ctx.tenantId))),

  updateRetention: dashboardProcedure('admin')
    .meta({
      openapi: {
        method: 'PATCH', path: '/dashboard/retention', tags: RETENTION, summary: 'Keep kinds of history for fewer days than the plan allows (owner/admin)',
        description: `Body: days per kind, e.g. \`{"workflow_runs": 30}\`; null puts a kind back to the plan's days; kinds not named keep their setting. Each value lies between the kind's \`min_days\` and the plan's \`plan_days\`, or nothing changes: 400 INVALID_INPUT with one issue per kind out of bounds, naming the bounds. The change is audit-logged (retention.updated) and the next retention run applies it.\n\n${RETENTION_NOTE}`,
      },
    })
    .input(retentionUpdateInput)
    .output(ok(retentionSchema))
    .mutation(async ({ ctx, input }) => envelope(await updateTenantRetention(ctx.em, ctx.deps.config, ctx.tenantId, ctx.actor, input))),

  auditLog: dashboardProcedure('admin')
    .meta({
      openapi: {
        method: 'GET', path: '/dashboard/audit-log', tags: ['Dashboard audit log'], summary: 'Audit log, newest first (owner/admin)',
        description: `Filter: \`action\`. ${HISTORY_LIST_NOTE}`,
      },
    })
    .input(z.object({ ...historyPageQuery, action: z.string().max(100).optional() }))
    .output(ok(auditLogOutput))
    .query(async ({ ctx, input }) => envelope(await listAuditLog(ctx.em, ctx.tenantId, input, { action: input.action }))),
});
