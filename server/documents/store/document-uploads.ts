// An upload's intake in one statement: the document (processing), its collection references, the
// ingestion job holding the bytes, its audit entry and, unless this process ingests the upload
// itself, its graphile job. This module writes those tables only here: one round trip and one commit instead of eight statements in a
// transaction (on this machine each round trip costs a socket write and read on both sides, which
// made up most of an upload's time). Every other write to documents, document_collections,
// ingestion_jobs and audit_log goes through their own stores.
// Raw SQL on the SqlPool, as a named prepared statement: a CTE of inserts embedding
// graphile_worker.add_job, which neither the entities nor Kysely can say.
import type { SqlPool } from '../../../db/sql-pool.js';
import { ingestDocumentJob } from '../../jobs/contracts.js';
import { addJobSql } from '../../jobs/store/job-queue.js';
import type { CollectionDefaults, IngestionJobOptions } from '../ingestion-options.js';

export interface NewUpload {
  tenantId: string;
  documentId: string;
  jobId: string;
  name: string;
  category: string;
  mimeType: string;
  sizeBytes: number;
  contentHash: string;
  /** The actor's name: the document's uploaded_by, the job's created_by and the audit entry's actor_name. */
  actorName: string;
  actorType: string;
  actorId: string | null;
  /** Distinct valid UUIDs; unless all are the tenant's collections, nothing is written. */
  collectionIds: string[];
  options: IngestionJobOptions;
  content: Buffer;
  auditDetails: Record<string, unknown>;
  /**
   * This process's heartbeat id when it may ingest the upload itself (no graphile job: the recovery
   * sweep queues one should the process stop first); null: a graphile job is queued now.
   */
  ownerId: string | null;
}

// The collections are checked in the same statement: nothing is written unless every one of
// `collection_ids` is the tenant's. The job is owned by `$16` (a process ingesting it itself) only
// when no embedding model comes from the first collection's default; otherwise it gets a graphile job.
const INSERT_UPLOAD = `
  with cols as (
    select c.id, c.default_chunking_strategy, c.default_chunk_size, c.default_chunk_overlap, c.default_embedding_model
      from collections c where c.tenant_id = $1 and c.id = any($12::uuid[])
  ), found as (
    select count(*) = cardinality($12::uuid[]) as all_found from cols
  ), doc as (
    insert into documents (id, tenant_id, name, category, mime_type, size_bytes, content_hash, status, characters, pages, chunk_count, embedding_model, uploaded_by, uploaded_at, updated_at)
    select $2, $1, $4, $5, $6, $7, $8, 'processing', 0, null, 0, null, $9, now(), now() from found where all_found
    returning id
  ), refs as (
    insert into document_collections (document_id, collection_id, tenant_id, created_at)
    select doc.id, cols.id, $1, now() from doc, cols
  ), job as (
    insert into ingestion_jobs (id, tenant_id, document_id, source_type, name, status, stage, progress, options, content, created_by, created_at, owner_id)
    select $3, $1, doc.id, 'upload', $4, 'pending', null, 0, $13::jsonb, $14, $9, now(),
           case when (select default_embedding_model from cols where id = ($12::uuid[])[1]) is null then $16::text end
      from doc
    returning id, owner_id
  ), audit as (
    insert into audit_log (id, tenant_id, actor_type, actor_id, actor_name, action, target_type, target_id, details, created_at)
    select gen_random_uuid(), $1, $10, $11, $9, 'document.uploaded', 'document', doc.id::text, $15::jsonb, now() from doc
  )
  select (select count(*)::int from job) as stored,
         (select owner_id from job) as owner_id,
         (select count(${addJobSql(ingestDocumentJob, { jobId: 'job.id::text' })})::int from job where owner_id is null) as queued,
         (select coalesce(json_agg(cols), '[]'::json) from cols) as collections`;

export interface WrittenUpload {
  /** False when one of the collections is not the tenant's: nothing was written. */
  stored: boolean;
  /** The owner the job was written with (null: a graphile job was queued). */
  ownerId: string | null;
  /** The ingestion defaults of the collections found. */
  collections: CollectionDefaults[];
}

/** Writes the upload, its job row and (without an owner) its graphile job, committed together. */
export async function insertUpload(sql: SqlPool, upload: NewUpload): Promise<WrittenUpload> {
  const [row] = await sql.query<{ stored: number; owner_id: string | null; collections: CollectionDefaults[] }>(
    INSERT_UPLOAD,
    [
      upload.tenantId, upload.documentId, upload.jobId, upload.name, upload.category, upload.mimeType, upload.sizeBytes, upload.contentHash,
      upload.actorName, upload.actorType, upload.actorId, upload.collectionIds, JSON.stringify(upload.options), upload.content,
      JSON.stringify(upload.auditDetails), upload.ownerId,
    ],
    'documents-insert-upload',
  );
  return { stored: row.stored > 0, ownerId: row.owner_id, collections: row.collections };
}
