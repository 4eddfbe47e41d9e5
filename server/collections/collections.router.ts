import { z } from 'zod';
import { envelope, ok } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { collectionSchema } from './collections.schemas.js';
import { listCollections } from './collections.service.js';

const TAGS = ['Collections'];

export const collectionsRouter = router({
  list: apiKeyProcedure
    .meta({ openapi: { method: 'GET', path: '/v1/collections', tags: TAGS, summary: 'The tenant\'s knowledge collections' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ collections: z.array(collectionSchema) })))
    .query(async ({ ctx }) => envelope(await listCollections(ctx.em, ctx.tenantId))),
});
