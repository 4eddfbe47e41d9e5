import { envelope, ok, okEmpty, pageToLimitOffset } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { documentIdInput, documentListOutput, documentOutput, jobIdInput, jobOutput, jobReferenceOutput, listDocumentsInput, uploadDocumentInput } from './documents.schemas.js';
import { deleteDocument, getDocument, listDocuments, uploadDocument } from './documents.service.js';
import { getIngestionJob } from './ingestion-jobs.service.js';
import { SUPPORTED_MEDIA_TYPES, UPLOAD_ROUTE } from './media-types.js';

const TAGS = ['Documents'];
const BASE = '/v1/documents';

// The tenant-wide document pool with an API key: upload (the dashboard's upload, for keys such as
// an ingest-only one), read, delete, and follow an upload's ingestion job.
export const documentsRouter = router({
  upload: apiKeyProcedure('documents:write')
    .meta({
      openapi: {
        method: 'POST',
        path: BASE,
        tags: TAGS,
        summary: 'Upload a document into the tenant\'s pool; it is ingested asynchronously',
        description: [
          `The same upload as POST /dashboard/documents: answers 202 with the ingestion job's id; follow it at GET /v1/ingestion-jobs/{id}. Supported types: ${SUPPORTED_MEDIA_TYPES.join(', ')}`,
          '(`mime_type` is inferred from the name\'s extension when absent): others are 415 UNSUPPORTED_MEDIA_TYPE. A decoded file over 25 MB is 413 PAYLOAD_TOO_LARGE;',
          'content that is not base64, or empty, is 400 INVALID_INPUT. Every `collection_ids` entry must be one of the tenant\'s collections (404 NOT_FOUND);',
          'API-key callers are not role-scoped, so restricted collections take uploads from keys with documents:write.',
        ].join(' '),
      },
      ...UPLOAD_ROUTE,
    })
    .input(uploadDocumentInput)
    .output(ok(jobReferenceOutput))
    .mutation(async ({ ctx, input }) => envelope(await uploadDocument(ctx.deps, ctx.tenantId, ctx.actor, input))),

  getJob: apiKeyProcedure('knowledge:read')
    .meta({ openapi: { method: 'GET', path: '/v1/ingestion-jobs/{id}', tags: TAGS, summary: 'One ingestion job: status, stage, progress 0-100, result or error_message' }, errors: ['NOT_FOUND'] })
    .input(jobIdInput)
    .output(ok(jobOutput))
    .query(async ({ ctx, input }) => envelope(await getIngestionJob(ctx.em, ctx.tenantId, input.id))),

  list: apiKeyProcedure('knowledge:read')
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

  get: apiKeyProcedure('knowledge:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/{id}`, tags: TAGS, summary: 'One document' }, errors: ['NOT_FOUND'] })
    .input(documentIdInput)
    .output(ok(documentOutput))
    .query(async ({ ctx, input }) => envelope(await getDocument(ctx.em, ctx.tenantId, input.id))),

  delete: apiKeyProcedure('documents:write')
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
