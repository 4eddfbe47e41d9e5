// An upload's intake in one statement: the document (processing), its collection references, the
// ingestion job holding the bytes, its audit entry and, unless this process ingests the upload
// itself, its graphile job. This module writes those tables only here: one round trip and one commit instead of eight statements in a
// transaction (on this machine each round trip costs a socket write and read on both sides, which
// made up most of an upload's time). Every other write to documents, document_collections,
// ingestion_jobs and audit_log goes through their own stores.
// On the SqlPool, as a named prepared statement: a CTE of inserts built with Kysely, embedding
// graphile_worker.add_job (addJobSql).
import { sql } from 'kysely';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, statement } from '../../../db/statements.js';
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
// `collection_ids` is the tenant's. The job is owned by `ownerId` (a process ingesting it itself) only
// when no embedding model comes from the first collection's default; otherwise it gets a graphile job.
const INSERT_UPLOAD = statement<UploadParams>()('documents-insert-upload', (p) =>
  build
    .with('cols', (db) =>
      db
        .selectFrom('collections as c')
        .select(['c.id', 'c.default_chunking_strategy', 'c.default_chunk_size', 'c.default_chunk_overlap', 'c.default_embedding_model'])
        .where('c.tenant_id', '=', p.tenantId)
        .where(sql<boolean>`${sql.ref('c.id')} = any(${p.collectionIds}::uuid[])`),
    )
    .with('found', (db) => db.selectFrom('cols').select(sql<boolean>`count(*) = cardinality(${p.collectionIds}::uuid[])`.as('all_found')))
    .with('doc', (db) =>
      db
        .insertInto('documents')
        .columns(['id', 'tenant_id', 'name', 'category', 'mime_type', 'size_bytes', 'content_hash', 'status', 'characters', 'pages', 'chunk_count', 'embedding_model', 'uploaded_by', 'uploaded_at', 'updated_at'])
        .expression(
          db
            .selectFrom('found')
            .select((eb) => [
              eb.val(p.documentId).as('id'), eb.val(p.tenantId).as('tenant_id'), eb.val(p.name).as('name'), eb.val(p.category).as('category'),
              eb.val(p.mimeType).as('mime_type'), eb.val(p.sizeBytes).as('size_bytes'), eb.val(p.contentHash).as('content_hash'),
              sql.lit('processing').as('status'), sql.lit(0).as('characters'), sql.lit(null).as('pages'), sql.lit(0).as('chunk_count'),
              sql.lit(null).as('embedding_model'), eb.val(p.actorName).as('uploaded_by'), sql<Date>`now()`.as('uploaded_at'), sql<Date>`now()`.as('updated_at'),
            ])
            .where((eb) => eb.ref('all_found')),
        )
        .returning('id'),
    )
    .with('refs', (db) =>
      db
        .insertInto('document_collections')
        .columns(['document_id', 'collection_id', 'tenant_id', 'created_at'])
        .expression(db.selectFrom(['doc', 'cols']).select((eb) => ['doc.id as document_id', 'cols.id as collection_id', eb.val(p.tenantId).as('tenant_id'), sql<Date>`now()`.as('created_at')])),
    )
    .with('job', (db) =>
      db
        .insertInto('ingestion_jobs')
        .columns(['id', 'tenant_id', 'document_id', 'source_type', 'name', 'status', 'stage', 'progress', 'options', 'content', 'created_by', 'created_at', 'owner_id'])
        .expression(
          db.selectFrom('doc').select((eb) => [
            eb.val(p.jobId).as('id'), eb.val(p.tenantId).as('tenant_id'), 'doc.id as document_id', sql.lit('upload').as('source_type'), eb.val(p.name).as('name'),
            sql.lit('pending').as('status'), sql.lit(null).as('stage'), sql.lit(0).as('progress'), sql`${p.options}::jsonb`.as('options'), eb.val(p.content).as('content'),
            eb.val(p.actorName).as('created_by'), sql<Date>`now()`.as('created_at'),
            sql<string | null>`case when (${db.selectFrom('cols').select('default_embedding_model').where(sql<boolean>`${sql.ref('id')} = (${p.collectionIds}::uuid[])[1]`)}) is null then ${p.ownerId}::text end`.as('owner_id'),
          ]),
        )
        .returning(['id', 'owner_id']),
    )
    .with('audit', (db) =>
      db
        .insertInto('audit_log')
        .columns(['id', 'tenant_id', 'actor_type', 'actor_id', 'actor_name', 'action', 'target_type', 'target_id', 'details', 'created_at'])
        .expression(
          db.selectFrom('doc').select((eb) => [
            sql<string>`gen_random_uuid()`.as('id'), eb.val(p.tenantId).as('tenant_id'), eb.val(p.actorType).as('actor_type'), eb.val(p.actorId).as('actor_id'),
            eb.val(p.actorName).as('actor_name'), sql.lit('document.uploaded').as('action'), sql.lit('document').as('target_type'),
            sql<string>`${sql.ref('doc.id')}::text`.as('target_id'), sql`${p.auditDetails}::jsonb`.as('details'), sql<Date>`now()`.as('created_at'),
          ]),
        ),
    )
    .selectNoFrom((eb) => [
      eb.selectFrom('job').select(sql<number>`count(*)::int`.as('n')).as('stored'),
      eb.selectFrom('job').select('owner_id').as('owner_id'),
      eb.selectFrom('job').select(sql<number>`count(${sql.raw(addJobSql(ingestDocumentJob, { jobId: 'job.id::text' }))})::int`.as('n')).where('owner_id', 'is', null).as('queued'),
      eb.selectFrom('cols').select(sql<CollectionDefaults[]>`coalesce(json_agg(${sql.table('cols')}), '[]'::json)`.as('c')).as('collections'),
    ]),
).as<{ stored: number; owner_id: string | null; queued: number; collections: CollectionDefaults[] }>();

/** The statement's parameters: the upload's, with its JSON as text. */
type UploadParams = Omit<NewUpload, 'options' | 'auditDetails'> & { options: string; auditDetails: string };

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
  const [row] = await INSERT_UPLOAD.run(sql, { ...upload, options: JSON.stringify(upload.options), auditDetails: JSON.stringify(upload.auditDetails) });
  return { stored: row.stored > 0, ownerId: row.owner_id, collections: row.collections };
}
