import { z } from 'zod';
import { envelope, ok, okEmpty } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { collectionId, collectionListOutput, collectionOutput, createCollectionInput, updateCollectionInput } from './collections.schemas.js';
import { createCollection, deleteCollection, getCollection, listCollections, updateCollection } from './collections.service.js';

const TAGS = ['Collections'];
const BASE = '/v1/collections';

export const collectionsRouter = router({
  list: apiKeyProcedure('knowledge:read')
    .meta({ openapi: { method: 'GET', path: BASE, tags: TAGS, summary: 'The tenant\'s knowledge collections' } })
    .input(z.object({}).optional())
    .output(ok(collectionListOutput))
    .query(async ({ ctx }) => envelope(await listCollections(ctx.deps.sql, ctx.tenantId))),

  create: apiKeyProcedure('collections:write')
    .meta({
      openapi: {
        method: 'POST',
        path: BASE,
        tags: TAGS,
        summary: 'Create a collection attached to one or more active domains',
        description: 'Every `domain_keys` entry must be a currently active domain of the tenant (an enabled built-in domain or an active custom domain): an unknown key is 404 NOT_FOUND, a built-in domain not enabled or an inactive custom domain 403 DOMAIN_NOT_ENABLED, naming the key (`details.domain`). The slug is unique within the tenant: 409 SLUG_CONFLICT. `default_chunk_overlap` must be below `default_chunk_size`. A collection starts with no tags, `workspace` visibility and no retrieval_config.',
      },
      successStatus: 201,
      errors: ['NOT_FOUND', 'DOMAIN_NOT_ENABLED', 'SLUG_CONFLICT'],
    })
    .input(createCollectionInput)
    .output(ok(collectionOutput))
    .mutation(async ({ ctx, input }) => envelope(await createCollection(ctx.em, ctx.tenantId, ctx.actor, input))),

  get: apiKeyProcedure('knowledge:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{id}`, tags: TAGS, summary: 'One collection' }, errors: ['NOT_FOUND'] })
    .input(collectionId)
    .output(ok(collectionOutput))
    .query(async ({ ctx, input }) => envelope(await getCollection(ctx.em, ctx.tenantId, input.id))),

  update: apiKeyProcedure('collections:write')
    .meta({
      openapi: {
        method: 'PATCH',
        path: `${BASE}/{id}`,
        tags: TAGS,
        summary: 'Update a collection (slug and domain_keys are not updatable and are ignored if sent)',
        description: 'Only the fields sent change; null clears a nullable field. `retrieval_config` is replaced as a whole. `slug` and `domain_keys` cannot be changed here: sent anyway, they are ignored (domains are attached and detached from the dashboard). API-key callers may update restricted collections.',
      },
      errors: ['NOT_FOUND'],
    })
    .input(updateCollectionInput)
    .output(ok(collectionOutput))
    .mutation(async ({ ctx, input }) => {
      const { id, ...fields } = input;
      return envelope(await updateCollection(ctx.em, ctx.tenantId, ctx.actor, id, fields, {}));
    }),

  delete: apiKeyProcedure('collections:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/{id}`, tags: TAGS, summary: 'Delete a collection with its domain attachments (pooled documents stay)' }, errors: ['NOT_FOUND'] })
    .input(collectionId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteCollection(ctx.em, ctx.tenantId, ctx.actor, input.id);
      return { success: true as const };
    }),
});
