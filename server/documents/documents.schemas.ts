import { z } from 'zod';
import { historyPageQuery, historyPaginationSchema } from '../common/pagination.js';
import { bodyInt, noCoerce, pageQuery, paginationSchema } from '../common/schemas.js';
import { MAX_CHUNK_OVERLAP, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE } from '../collections/collections.schemas.js';
import { INGESTION_STATUSES } from '../../db/column-values.js';
import { CHUNKING_STRATEGY_NAMES } from './chunk-text.js';

export const DOCUMENT_STATUSES = ['processing', 'ready', 'failed'] as const;

export const documentSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    category: z.string(),
    chunks: z.number().int(),
    sizeKb: z.number().int(),
    embeddingModel: z.string().nullable(),
    uploadedBy: z.string(),
    uploadedAt: z.string(),
    collections: z.array(z.object({ id: z.string(), slug: z.string(), label: z.string(), color: z.string() })),
    status: z.enum(DOCUMENT_STATUSES).describe('`processing` until its ingestion job completes, then `ready`; `failed` when the file could not be ingested'),
  })
  .meta({ id: 'Document' });
export type DocumentDto = z.infer<typeof documentSchema>;

export const ingestionJobSchema = z
  .object({
    id: z.string(),
    source_type: z.string(),
    name: z.string(),
    status: z.enum(INGESTION_STATUSES),
    stage: z.string().nullable().describe('`extracting`, `chunking`, `embedding`, `indexing`, then `completed`; `embedding (waiting for provider)` while an embeddings batch waits out a rate limit or outage; a failed job keeps the stage it failed in'),
    progress: z.number().int().min(0).max(100),
    result: z.record(z.string(), z.unknown()).nullable().describe('On completion: `chunks`, `characters`, `pages` (PDF), `embedded`, `embedding_model`, `chunking`'),
    error_message: z.string().nullable(),
    created_at: z.string(),
    started_at: z.string().nullable(),
    completed_at: z.string().nullable(),
    document_id: z.string().nullable().describe('The document being ingested (null once a cancelled upload\'s document is removed)'),
  })
  .meta({ id: 'IngestionJob' });
export type IngestionJobDto = z.infer<typeof ingestionJobSchema>;

// ------------------------------------------------------------------ requests

const chunkingInput = noCoerce(
  z
    .object({
      strategy: z.enum(CHUNKING_STRATEGY_NAMES),
      size: bodyInt(MIN_CHUNK_SIZE, MAX_CHUNK_SIZE).optional(),
      overlap: bodyInt(0, MAX_CHUNK_OVERLAP).optional(),
    })
    .refine((c) => c.size === undefined || c.overlap === undefined || c.overlap < c.size, { message: 'overlap must be less than size', path: ['overlap'] }),
);

export const uploadDocumentInput = z.object({
  name: z.string().trim().min(1).max(300),
  content_base64: z.string().describe('The file, base64-encoded (at most 25 MB once decoded)'),
  mime_type: z.string().trim().min(1).max(200).optional().describe('Inferred from the name\'s extension when absent'),
  category: z.string().trim().min(1).max(100).optional().describe('Default `document`'),
  collection_ids: z.array(z.string().max(64)).max(100).optional(),
  chunking: chunkingInput.optional().describe('Default: the first collection\'s defaults, else semantic, 1200 characters, overlap 150'),
  embedding_model: z.string().trim().min(1).max(200).optional().describe('Default: the first collection\'s default_embedding_model, else the platform\'s EMBEDDING_MODEL; with none, chunks are not embedded'),
});
export type UploadDocumentInput = z.infer<typeof uploadDocumentInput>;

export const jobReferenceOutput = z.object({ jobId: z.string(), status: z.literal('pending') });
export type JobReference = z.infer<typeof jobReferenceOutput>;

export const documentIdInput = z.object({ id: z.string().max(64) });
export const jobIdInput = z.object({ id: z.string().max(64) });

export const listDocumentsInput = z.object({
  collection_id: z.string().max(64).optional(),
  category: z.string().max(100).optional(),
  ...pageQuery,
});
export const listJobsInput = z.object({ status: z.enum(INGESTION_STATUSES).optional(), ...historyPageQuery });

export const attachDocumentInput = z.object({ id: z.string().max(64), document_id: z.string().max(64) });
export const detachDocumentInput = z.object({ id: z.string().max(64), documentId: z.string().max(64) });

export const documentOutput = z.object({ document: documentSchema });
export const documentListOutput = z.object({ documents: z.array(documentSchema), pagination: paginationSchema });
export type DocumentPage = z.infer<typeof documentListOutput>;
export const jobOutput = z.object({ job: ingestionJobSchema });
export const jobListOutput = z.object({ jobs: z.array(ingestionJobSchema), pagination: historyPaginationSchema });
