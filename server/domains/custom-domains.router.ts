// A tenant's custom domains: the groups its custom intents live in (dashboard API).
import { z } from 'zod';
import { envelope, ok, okEmpty, pageQuery, pageToLimitOffset, paginationSchema } from '../common/schemas.js';
import { dashboardProcedure, router } from '../trpc.js';
import { createDomainInput, customDomainSchema, updateDomainInput } from './custom-domains.schemas.js';
import { createCustomDomain, deleteCustomDomain, getCustomDomain, listCustomDomainsPage, updateCustomDomain } from './custom-domains.service.js';

const DOMAINS = ['Custom domains'];
const BASE = '/dashboard/custom-domains';

const domainKey = z.object({ domainKey: z.string().max(100) });

export const customDomainsRouter = router({
  listDomains: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: BASE, tags: DOMAINS, summary: 'The tenant\'s custom domains by sort_order, then key; paged by page and pageSize' } })
    .input(z.object(pageQuery))
    .output(ok(z.object({ domains: z.array(customDomainSchema), pagination: paginationSchema })))
    .query(async ({ ctx, input }) => envelope(await listCustomDomainsPage(ctx.em, ctx.tenantId, pageToLimitOffset(input.page, input.pageSize)))),

  createDomain: dashboardProcedure('developer')
    .meta({ openapi: { method: 'POST', path: BASE, tags: DOMAINS, summary: 'Create a custom domain' }, successStatus: 201, errors: ['DOMAIN_KEY_TAKEN'] })
    .input(createDomainInput)
    .output(ok(z.object({ domain: customDomainSchema })))
    .mutation(async ({ ctx, input }) => envelope(await createCustomDomain(ctx.em, ctx.tenantId, ctx.actor, input))),

  getDomain: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: `${BASE}/{domainKey}`, tags: DOMAINS, summary: 'One custom domain' }, errors: ['NOT_FOUND'] })
    .input(domainKey)
    .output(ok(z.object({ domain: customDomainSchema })))
    .query(async ({ ctx, input }) => envelope(await getCustomDomain(ctx.em, ctx.tenantId, input.domainKey))),

  updateDomain: dashboardProcedure('developer')
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/{domainKey}`, tags: DOMAINS, summary: 'Rename, describe, reorder, activate or deactivate a custom domain' }, errors: ['NOT_FOUND'] })
    .input(updateDomainInput)
    .output(ok(z.object({ domain: customDomainSchema })))
    .mutation(async ({ ctx, input }) => {
      const { domainKey: key, ...fields } = input;
      return envelope(await updateCustomDomain(ctx.em, ctx.tenantId, ctx.actor, key, fields));
    }),

  deleteDomain: dashboardProcedure('developer')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/{domainKey}`, tags: DOMAINS, summary: 'Delete a custom domain with its intents and their versions' }, errors: ['NOT_FOUND'] })
    .input(domainKey)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteCustomDomain(ctx.em, ctx.tenantId, ctx.actor, input.domainKey);
      return { success: true as const };
    }),
});
