import { envelope, ok, okEmpty, pageToLimitOffset } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { documentIdInput, documentListOutput, documentOutput, listDocumentsInput } from './documents.schemas.js';
import { deleteDocument, getDocument, listDocuments } from './documents.service.js';

const TAGS = ['Documents'];
const BASE = '/v1/documents';

// The tenant-wide document pool: read and delete with an API key (upload is a dashboard route).
export const documentsRouter = router({
  list: apiKeyProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: BASE,
        tags: TAGS,
        summary: 'The tenant\'s documents, newest first',
        description: 'Filters: `collection_id` (documents referenced by that collection) and `category` (exact). Documents still being ingested are listed with status `processing`.',
      },
    })
    .input(listDocumentsInput)
    .output(ok(documentListOutput))
    .query(async ({ ctx, input }) =>
      envelope(await listDocuments(ctx.em, ctx.tenantId, { collectionId: input.collection_id, category: input.category }, pageToLimitOffset(input.page, input.pageSize))),
    ),

  get: apiKeyProcedure
    .meta({ openapi: { method: 'GET', path: `${BASE}/{id}`, tags: TAGS, summary: 'One document' }, errors: ['NOT_FOUND'] })
    .input(documentIdInput)
    .output(ok(documentOutput))
    .query(async ({ ctx, input }) => envelope(await getDocument(ctx.em, ctx.tenantId, input.id))),

  delete: apiKeyProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: `${BASE}/{id}`,
        tags: TAGS,
        summary: 'Delete a document with its chunks and collection references',
        description: 'Its chunks leave retrieval at once. An ingestion of the document still under way is cancelled.',
      },
      errors: ['NOT_FOUND'],
    })
    .input(documentIdInput)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteDocument(ctx.em, ctx.tenantId, ctx.actor, input.id);
      return { success: true as const };
    }),
});
