import { z } from 'zod';
import { envelope, ok, okEmpty, pageQuery, pageToLimitOffset } from '../common/schemas.js';
import { dashboardProcedure, router } from '../trpc.js';
import {
  createIntentInput, customIntentSchema, diffSchema, feedOutput, updateIntentInput,
  versionSchema, versionSummarySchema,
} from './custom-intents.schemas.js';
import {
  createCustomIntent, deleteCustomIntent, getCustomIntent, listCustomIntents, restoreIntentVersion, updateCustomIntent,
} from './custom-intents.service.js';
import { diffIntentVersions, getIntentVersion, listIntentVersionFeed, listIntentVersions } from './intent-versions.service.js';

const INTENTS = ['Custom intents'];
const VERSIONS = ['Intent versions'];
const BASE = '/dashboard/custom-domains';

const domainKey = z.object({ domainKey: z.string().max(100) });
const intentRef = domainKey.extend({ key: z.string().max(100) });
const versionRef = intentRef.extend({ versionNumber: z.coerce.number().int().min(1).max(1_000_000_000) });

// The literal feed path is declared before `{domainKey}` so that route cannot swallow it (the root
// router puts this one ahead of the custom domains' routes, which share the path's prefix).
export const intentVersionFeedRouter = router({
  versionFeed: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: `${BASE}/intent-versions`, tags: VERSIONS, summary: 'Recent intent changes across every custom domain, newest first' } })
    .input(z.object({ ...pageQuery, domain_key: z.string().max(100).optional() }))
    .output(ok(feedOutput))
    .query(async ({ ctx, input }) => envelope(await listIntentVersionFeed(ctx.em, ctx.tenantId, pageToLimitOffset(input.page, input.pageSize), { domainKey: input.domain_key }))),
});

export const customIntentsRouter = router({
  listIntents: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: `${BASE}/{domainKey}/intents`, tags: INTENTS, summary: 'A custom domain\'s intents, by sort_order' }, errors: ['NOT_FOUND'] })
    .input(domainKey)
    .output(ok(z.object({ intents: z.array(customIntentSchema) })))
    .query(async ({ ctx, input }) => envelope(await listCustomIntents(ctx.em, ctx.tenantId, input.domainKey))),

  createIntent: dashboardProcedure('developer')
    .meta({ openapi: { method: 'POST', path: `${BASE}/{domainKey}/intents`, tags: INTENTS, summary: 'Create a custom intent (version 1)' }, successStatus: 201, errors: ['NOT_FOUND', 'INTENT_KEY_TAKEN'] })
    .input(createIntentInput)
    .output(ok(z.object({ intent: customIntentSchema })))
    .mutation(async ({ ctx, input }) => envelope(await createCustomIntent(ctx.em, ctx.tenantId, ctx.actor, input))),

  getIntent: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: `${BASE}/{domainKey}/intents/{key}`, tags: INTENTS, summary: 'One custom intent (the live definition)' }, errors: ['NOT_FOUND'] })
    .input(intentRef)
    .output(ok(z.object({ intent: customIntentSchema })))
    .query(async ({ ctx, input }) => envelope(await getCustomIntent(ctx.em, ctx.tenantId, input.domainKey, input.key))),

  updateIntent: dashboardProcedure('developer')
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/{domainKey}/intents/{key}`, tags: INTENTS, summary: 'Save changes: every PATCH makes a new immutable version' }, errors: ['NOT_FOUND'] })
    .input(updateIntentInput)
    .output(ok(z.object({ intent: customIntentSchema })))
    .mutation(async ({ ctx, input }) => envelope(await updateCustomIntent(ctx.em, ctx.tenantId, ctx.actor, input))),

  deleteIntent: dashboardProcedure('developer')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/{domainKey}/intents/{key}`, tags: INTENTS, summary: 'Delete a custom intent and its versions' }, errors: ['NOT_FOUND'] })
    .input(intentRef)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteCustomIntent(ctx.em, ctx.tenantId, ctx.actor, input.domainKey, input.key);
      return { success: true as const };
    }),

  listVersions: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: `${BASE}/{domainKey}/intents/{key}/versions`, tags: VERSIONS, summary: 'Versions of a custom intent, newest first' }, errors: ['NOT_FOUND'] })
    .input(intentRef)
    .output(ok(z.object({ versions: z.array(versionSummarySchema) })))
    .query(async ({ ctx, input }) => envelope(await listIntentVersions(ctx.em, ctx.tenantId, input.domainKey, input.key))),

  getVersion: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: `${BASE}/{domainKey}/intents/{key}/versions/{versionNumber}`, tags: VERSIONS, summary: 'One version with its full definition' }, errors: ['NOT_FOUND'] })
    .input(versionRef)
    .output(ok(z.object({ version: versionSchema })))
    .query(async ({ ctx, input }) => envelope(await getIntentVersion(ctx.em, ctx.tenantId, input.domainKey, input.key, input.versionNumber))),

  diffVersions: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: `${BASE}/{domainKey}/intents/{key}/versions/{a}/diff/{b}`, tags: VERSIONS, summary: 'Field-level diff between two versions' }, errors: ['NOT_FOUND'] })
    .input(intentRef.extend({ a: z.coerce.number().int().min(1).max(1_000_000_000), b: z.coerce.number().int().min(1).max(1_000_000_000) }))
    .output(ok(diffSchema))
    .query(async ({ ctx, input }) => envelope(await diffIntentVersions(ctx.em, ctx.tenantId, input.domainKey, input.key, input.a, input.b))),

  restoreVersion: dashboardProcedure('developer')
    .meta({ openapi: { method: 'POST', path: `${BASE}/{domainKey}/intents/{key}/versions/{versionNumber}/restore`, tags: VERSIONS, summary: 'Restore a version as a new `restore` version; returns the live intent' }, errors: ['NOT_FOUND'] })
    .input(versionRef)
    .output(ok(z.object({ intent: customIntentSchema })))
    .mutation(async ({ ctx, input }) => envelope(await restoreIntentVersion(ctx.em, ctx.tenantId, ctx.actor, input.domainKey, input.key, input.versionNumber))),
});
