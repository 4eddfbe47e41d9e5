import { defineEntity, p } from '@mikro-orm/core';
import { Collection } from './collection.js';
import { Tenant } from './tenant.js';
import { INGESTION_STATUSES } from '../column-values.js';

/** The tenant-wide document pool: collections reference documents, they do not own them. */
export const Document = defineEntity({
  name: 'Document',
  tableName: 'documents',
  indexes: [{ properties: ['tenant', 'uploadedAt'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    name: p.string().length(300),
    category: p.string().length(100).default('document'),
    mimeType: p.string().length(200),
    sizeBytes: p.integer(),
    /** SHA-256 of the uploaded bytes. */
    contentHash: p.string().length(64),
    /** `processing` until its ingestion job completes, then `ready` (or `failed`). */
    status: p.enum(['processing', 'ready', 'failed'] as const).default('processing'),
    characters: p.integer().default(0),
    pages: p.integer().nullable(),
    chunkCount: p.integer().default(0),
    embeddingModel: p.string().length(200).nullable(),
    uploadedBy: p.string().length(320),
    uploadedAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});

export const DocumentCollection = defineEntity({
  name: 'DocumentCollection',
  tableName: 'document_collections',
  properties: {
    document: () => p.manyToOne(Document).deleteRule('cascade').primary(),
    collection: () => p.manyToOne(Collection).deleteRule('cascade').primary().index(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

/**
 * One retrievable piece of a document. `(document, ordinal)` is unique, so a re-run ingestion job
 * cannot duplicate chunks. The full-text vector and the embedding are written with raw SQL.
 */
export const DocumentChunk = defineEntity({
  name: 'DocumentChunk',
  tableName: 'document_chunks',
  uniques: [{ properties: ['document', 'ordinal'] }],
  // Declared here so generated migrations keep it. (No trigram index on the text: spelling is
  // corrected on the tenant's vocabulary in memory, and that index made every chunk insert costly.)
  indexes: [
    { name: 'document_chunks_search_vector_gin', expression: 'create index "document_chunks_search_vector_gin" on "document_chunks" using gin ("search_vector")' },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    document: () => p.manyToOne(Document).deleteRule('cascade'),
    ordinal: p.integer(),
    text: p.text(),
    characters: p.integer(),
    /** Section heading or page the chunk came from, when known. */
    locator: p.string().length(500).nullable(),
    /** to_tsvector('english', unaccent(text)), written on insert. */
    searchVector: p.string().columnType('tsvector').lazy().nullable(),
    /** Float32 little-endian vector (no pgvector on the embedded server). */
    embedding: p.blob().lazy().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});


/** An asynchronous ingestion (extract -> chunk -> embed -> index); the upload waits in `content`. */
export const IngestionJob = defineEntity({
  name: 'IngestionJob',
  tableName: 'ingestion_jobs',
  indexes: [
    // The list, newest first, paged by keyset, with and without its status filter.
    { name: 'ingestion_jobs_tenant_id_created_at_id_index', expression: `create index "ingestion_jobs_tenant_id_created_at_id_index" on "ingestion_jobs" ("tenant_id", "created_at" desc, "id" desc)` },
    { name: 'ingestion_jobs_tenant_id_status_created_at_id_index', expression: `create index "ingestion_jobs_tenant_id_status_created_at_id_index" on "ingestion_jobs" ("tenant_id", "status", "created_at" desc, "id" desc)` },
    // Finding the jobs of processes that stopped before finishing them (server/documents/local-ingestion.ts).
    { name: 'ingestion_jobs_owner_index', expression: `create index "ingestion_jobs_owner_index" on "ingestion_jobs" ("created_at") where "owner_id" is not null` },
  ],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    document: () => p.manyToOne(Document).deleteRule('set null').nullable(),
    sourceType: p.string().length(32).default('upload'),
    name: p.string().length(300),
    status: p.enum(INGESTION_STATUSES).default('pending'),
    stage: p.string().length(32).nullable(),
    progress: p.integer().default(0),
    /** Chunking and embedding options, target collections, category. */
    options: p.json<Record<string, unknown>>(),
    /** The uploaded bytes; cleared once the job ends. */
    content: p.blob().lazy().nullable(),
    result: p.json<Record<string, unknown>>().nullable(),
    errorMessage: p.text().nullable(),
    createdBy: p.string().length(320),
    createdAt: p.datetime().onCreate(() => new Date()),
    startedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
    /** The process ingesting the upload it accepted (its heartbeat id), until the ingestion ends. */
    ownerId: p.string().length(64).nullable(),
  },
});
