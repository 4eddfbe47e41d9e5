import { z } from 'zod';
import { envelope, ok } from '../common/schemas.js';
import { dashboardProcedure, router } from '../trpc.js';
import { attachDomainInput, collectionId, collectionListOutput, collectionOutput, detachDomainInput, updateCollectionInput } from './collections.schemas.js';
import { attachDomain, detachDomain, getCollection, listCollections, updateCollection } from './collections.service.js';

const TAGS = ['Collections (dashboard)'];
const BASE = '/dashboard/collections';
const RESTRICTED = 'Developer role or higher; a `restricted` collection needs admin or owner (403 FORBIDDEN).';

// The same collections as /v1/collections, for dashboard users (JWT).
export const dashboardCollectionsRouter = router({
  list: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: BASE, tags: TAGS, summary: 'The tenant\'s knowledge collections' } })
    .input(z.object({}).optional())
    .output(ok(collectionListOutput))
    .query(async ({ ctx }) => envelope(await listCollections(ctx.deps.sql, ctx.tenantId))),

  get: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: `${BASE}/{id}`, tags: TAGS, summary: 'One collection' }, errors: ['NOT_FOUND'] })
    .input(collectionId)
    .output(ok(collectionOutput))
    .query(async ({ ctx, input }) => envelope(await getCollection(ctx.em, ctx.tenantId, input.id))),

  update: dashboardProcedure('developer')
    .meta({
      openapi: {
        method: 'PATCH',
        path: `${BASE}/{id}`,
        tags: TAGS,
        summary: 'Update a collection (slug and domain_keys are not updatable and are ignored if sent)',
        description: `As PATCH /v1/collections/{id}. ${RESTRICTED}`,
      },
      errors: ['NOT_FOUND'],
    })
    .input(updateCollectionInput)
    .output(ok(collectionOutput))
    .mutation(async ({ ctx, input }) => {
      const { id, ...fields } = input;
      return envelope(await updateCollection(ctx.em, ctx.tenantId, ctx.actor, id, fields, { role: ctx.user.role }));
    }),

  attachDomain: dashboardProcedure('developer')
    .meta({
      openapi: {
        method: 'POST',
        path: `${BASE}/{id}/domains`,
        tags: TAGS,
        summary: 'Attach an active domain to a collection (idempotent)',
        description: `The domain must be an active domain of the tenant: an unknown domain is 404 NOT_FOUND, a built-in domain not enabled or an inactive custom domain 403 DOMAIN_NOT_ENABLED. Attaching a domain that is attached already changes nothing and answers 200 with the collection. ${RESTRICTED}`,
      },
      errors: ['NOT_FOUND', 'DOMAIN_NOT_ENABLED'],
    })
    .input(attachDomainInput)
    .output(ok(collectionOutput))
    .mutation(async ({ ctx, input }) => envelope(await attachDomain(ctx.em, ctx.tenantId, ctx.actor, input.id, input.domain_key, { role: ctx.user.role }))),

  detachDomain: dashboardProcedure('developer')
    .meta({
      openapi: {
        method: 'DELETE',
        path: `${BASE}/{id}/domains/{domainKey}`,
        tags: TAGS,
        summary: 'Detach a domain from a collection; returns the collection',
        description: `404 NOT_FOUND when the domain is not attached; 409 CONFLICT for the collection's last domain (a collection belongs to at least one domain). ${RESTRICTED}`,
      },
      errors: ['NOT_FOUND', 'CONFLICT'],
    })
    .input(detachDomainInput)
    .output(ok(collectionOutput))
    .mutation(async ({ ctx, input }) => envelope(await detachDomain(ctx.em, ctx.tenantId, ctx.actor, input.id, input.domainKey, { role: ctx.user.role }))),
});
