import { z } from 'zod';
import { envelope, ok, okEmpty } from '../common/schemas.js';
import { dashboardProcedure, router } from '../trpc.js';
import { listTenantProviderKeys, removeTenantProviderKey, saveTenantProviderKey } from './provider-keys.service.js';
import { listProviders } from './providers.js';

const TAGS = ['Model providers'];

const providerKeySchema = z
  .object({ provider: z.string(), keyPreview: z.string(), createdAt: z.string(), updatedAt: z.string() })
  .meta({ id: 'TenantProviderKey' });

const providerRef = z.object({ provider: z.string().min(1).max(64) });

export const providerKeysRouter = router({
  list: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/provider-keys', tags: TAGS, summary: 'The model providers of this server and the tenant\'s own keys for them (previews only)' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ providers: z.array(z.string()), keys: z.array(providerKeySchema) })))
    .query(async ({ ctx }) =>
      envelope({ providers: listProviders(ctx.deps.config).map((p) => p.name), keys: await listTenantProviderKeys(ctx.em, ctx.tenantId) }),
    ),

  set: dashboardProcedure('admin')
    .meta({ openapi: { method: 'PUT', path: '/dashboard/provider-keys/{provider}', tags: TAGS, summary: 'Use the tenant\'s own key for a provider (stored encrypted, never shown again)' } })
    .input(providerRef.extend({ apiKey: z.string().min(1).max(1000) }))
    .output(ok(z.object({ key: providerKeySchema })))
    .mutation(async ({ ctx, input }) => envelope({ key: await saveTenantProviderKey(ctx.em, ctx.deps, ctx.tenantId, ctx.actor, input.provider, input.apiKey) })),

  delete: dashboardProcedure('admin')
    .meta({ openapi: { method: 'DELETE', path: '/dashboard/provider-keys/{provider}', tags: TAGS, summary: 'Stop using the tenant\'s own key (the platform key applies again)' }, errors: ['NOT_FOUND'] })
    .input(providerRef)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await removeTenantProviderKey(ctx.em, ctx.tenantId, ctx.actor, input.provider);
      return { success: true as const };
    }),
});
