import { HISTORY_LIST_NOTE } from '../common/pagination.js';
import { envelope, ok } from '../common/schemas.js';
import { dashboardProcedure, router } from '../trpc.js';
import {
  attachDocumentInput, detachDocumentInput, documentOutput, jobIdInput, jobListOutput, jobOutput, jobReferenceOutput, listJobsInput, uploadDocumentInput,
} from './documents.schemas.js';
import { attachDocument, detachDocument, uploadDocument } from './documents.service.js';
import { cancelIngestionJob, getIngestionJob, listIngestionJobs } from './ingestion-jobs.service.js';
import { SUPPORTED_MEDIA_TYPES, UPLOAD_ROUTE } from './media-types.js';

const DOCUMENTS = ['Documents (dashboard)'];
const JOBS = ['Ingestion jobs'];
const COLLECTIONS = ['Collections (dashboard)'];
const RESTRICTED = 'Developer role or higher; a `restricted` collection needs admin or owner (403 FORBIDDEN).';

export const dashboardDocumentsRouter = router({
  upload: dashboardProcedure('developer')
    .meta({
      openapi: {
        method: 'POST',
        path: '/dashboard/documents',
        tags: DOCUMENTS,
        summary: 'Upload a document into the tenant\'s pool; it is ingested asynchronously',
        description: [
          `Answers 202 with the ingestion job's id; follow it at GET /dashboard/ingestion-jobs/{id}. Supported types: ${SUPPORTED_MEDIA_TYPES.join(', ')}`,
          '(`mime_type` is inferred from the name\'s extension when absent; PDF and DOCX content must match the type): others are 415 UNSUPPORTED_MEDIA_TYPE.',
          'A decoded file over 25 MB is 413 PAYLOAD_TOO_LARGE; content that is not base64, or empty, is 400 INVALID_INPUT. Every `collection_ids` entry must be one of the tenant\'s collections (404 NOT_FOUND).',
          'A file that cannot be read (corrupt PDF or DOCX, text that is not UTF-8, no extractable text) fails its job with `error_message`.',
          'A plain-text, Markdown or JSON file up to 1 MB with no embedding model to apply is ingested by the server that accepted it (when that server runs the job runner) right after the upload is stored; its job goes from `pending` straight to `completed` (stage and progress with it), usually within milliseconds. Developer role or higher.',
        ].join(' '),
      },
      ...UPLOAD_ROUTE,
    })
    .input(uploadDocumentInput)
    .output(ok(jobReferenceOutput))
    .mutation(async ({ ctx, input }) => envelope(await uploadDocument(ctx.deps, ctx.tenantId, ctx.actor, input))),

  listJobs: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/ingestion-jobs', tags: JOBS, summary: 'The tenant\'s ingestion jobs, newest first (filter: `status`)', description: HISTORY_LIST_NOTE } })
    .input(listJobsInput)
    .output(ok(jobListOutput))
    .query(async ({ ctx, input }) => envelope(await listIngestionJobs(ctx.em, ctx.tenantId, { status: input.status }, input))),

  getJob: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/dashboard/ingestion-jobs/{id}', tags: JOBS, summary: 'One ingestion job: status, stage, progress 0-100, result or error_message' }, errors: ['NOT_FOUND'] })
    .input(jobIdInput)
    .output(ok(jobOutput))
    .query(async ({ ctx, input }) => envelope(await getIngestionJob(ctx.em, ctx.tenantId, input.id))),

  cancelJob: dashboardProcedure('developer')
    .meta({
      openapi: {
        method: 'POST',
        path: '/dashboard/ingestion-jobs/{id}/cancel',
        tags: JOBS,
        summary: 'Cancel a pending or running ingestion job',
        description: 'The upload is abandoned: its document (with any chunks and collection references) is deleted. A running job stops at its next stage or embedding batch. 409 CONFLICT once the job has completed, failed or been cancelled. Developer role or higher.',
      },
      errors: ['NOT_FOUND', 'CONFLICT'],
    })
    .input(jobIdInput)
    .output(ok(jobOutput))
    .mutation(async ({ ctx, input }) => envelope(await cancelIngestionJob(ctx.em, ctx.tenantId, ctx.actor, input.id))),

  attachDocument: dashboardProcedure('developer')
    .meta({
      openapi: {
        method: 'POST',
        path: '/dashboard/collections/{id}/documents',
        tags: COLLECTIONS,
        summary: 'Add a document of the pool to a collection (idempotent); returns the document',
        description: `The document must be one of the tenant's (404 NOT_FOUND). ${RESTRICTED}`,
      },
      errors: ['NOT_FOUND'],
    })
    .input(attachDocumentInput)
    .output(ok(documentOutput))
    .mutation(async ({ ctx, input }) => envelope(await attachDocument(ctx.em, ctx.tenantId, ctx.actor, input.id, input.document_id, ctx.user.role))),

  detachDocument: dashboardProcedure('developer')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/dashboard/collections/{id}/documents/{documentId}',
        tags: COLLECTIONS,
        summary: 'Remove a document from a collection (the document stays in the pool); returns the document',
        description: `404 NOT_FOUND when the document is not in the collection. ${RESTRICTED}`,
      },
      errors: ['NOT_FOUND'],
    })
    .input(detachDocumentInput)
    .output(ok(documentOutput))
    .mutation(async ({ ctx, input }) => envelope(await detachDocument(ctx.em, ctx.tenantId, ctx.actor, input.id, input.documentId, ctx.user.role))),
});
