import { createHash, randomUUID } from 'node:crypto';
import { assertMayChangeCollection } from '../collections/collections.service.js';
import { lockCollectionRow } from '../collections/collection-records.js';
import type { Role } from '../../db/column-values.js';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAuditNow } from '../audit/audit.service.js';
import { DEFAULT_COLLECTION_COLOR } from '../collections/collections.schemas.js';
import { isoRequired, isUuid, type Pagination } from '../common/schemas.js';
import { AppError, invalidInput, notFound } from '../errors.js';
import type { AppDeps } from '../deps.js';
import type { DocumentDto, UploadDocumentInput } from './documents.schemas.js';
import { settleIngestionSettings, type IngestionJobOptions } from './ingestion-options.js';
import { LOCAL_OWNER, localIngestionFor } from './local-ingestion.js';
import { MAX_UPLOAD_BYTES, resolveMediaType } from './media-types.js';
import { insertUpload } from './store/document-uploads.js';
import {
  addDocumentCollection, countDocuments, deleteDocumentCollection, deleteDocumentRow, lockDocument, selectDocumentName,
  selectDocumentRow, selectDocumentRows, type DocumentRow,
} from './store/documents.js';
import { cancelDocumentIngestionJobs, lockDocumentIngestionJobs } from './store/ingestion-jobs.js';


export function toDocumentDto(row: DocumentRow): DocumentDto {
  return {
    id: row.id,
    name: row.name,
    category: row.category,
    chunks: row.chunk_count,
    sizeKb: Math.ceil(row.size_bytes / 1024),
    embeddingModel: row.embedding_model,
    uploadedBy: row.uploaded_by,
    uploadedAt: isoRequired(row.uploaded_at),
    collections: (row.collections ?? []).map((c) => ({ id: c.id, slug: c.slug, label: c.label, color: c.color ?? DEFAULT_COLLECTION_COLOR })),
    status: row.status,
  };
}

// ------------------------------------------------------------------ upload

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The uploaded bytes: 400 for text that is not base64 or decodes to nothing, 413 past 25 MB. */
function decodeUpload(contentBase64: string): Buffer {
  const compact = contentBase64.replace(/\s+/g, '');
  if (!BASE64.test(compact) || compact.length % 4 === 1) {
    throw invalidInput('content_base64 is not valid base64', [{ path: 'content_base64', message: 'expected standard base64 (A-Z, a-z, 0-9, +, /, = padding)', code: 'invalid_format' }]);
  }
  const padding = compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0;
  const size = Math.floor((compact.length * 3) / 4) - padding;
  if (size > MAX_UPLOAD_BYTES) {
    throw new AppError('PAYLOAD_TOO_LARGE', `The file is ${size} bytes; at most ${MAX_UPLOAD_BYTES} bytes (25 MB) are accepted`, { size_bytes: size, max_bytes: MAX_UPLOAD_BYTES });
  }
  const bytes = Buffer.from(compact, 'base64');
  if (bytes.length === 0) throw invalidInput('The file is empty', [{ path: 'content_base64', message: 'the decoded file is empty', code: 'too_small' }]);
  return bytes;
}

/** The distinct collection ids (404 naming the first that cannot be a collection's id). */
function distinctCollectionIds(ids: string[]): string[] {
  const unique = [...new Set(ids)];
  const malformed = unique.find((id) => !isUuid(id));
  if (malformed !== undefined) throw new AppError('NOT_FOUND', 'Collection not found', { collection_id: malformed });
  return unique;
}

/**
 * Stores the upload and queues its ingestion, committed together in one statement: the document
 * (processing), its collection references (each must be the tenant's, else 404 naming the first
 * that is not, and nothing is written), the ingestion job holding the bytes, the audit entry and
 * the graphile job. A small text document to index without embeddings is instead ingested by this
 * process at once, its job row owned by this process (local-ingestion.ts).
 */
export async function uploadDocument(deps: Pick<AppDeps, 'orm' | 'sql' | 'pgvector' | 'log' | 'config' | 'localRuns'>, tenantId: string, actor: Actor, input: UploadDocumentInput) {
  const bytes = decodeUpload(input.content_base64);
  const mimeType = resolveMediaType(input.name, input.mime_type, bytes);
  const collectionIds = distinctCollectionIds(input.collection_ids ?? []);
  const documentId = randomUUID();
  const jobId = randomUUID();
  const category = input.category ?? 'document';
  const options: IngestionJobOptions = {
    mime_type: mimeType,
    category,
    collection_ids: collectionIds,
    chunking: input.chunking ?? null,
    embedding_model: input.embedding_model ?? null,
  };
  const fallbackModel = deps.config.EMBEDDING_MODEL ?? null;
  // Whether this process may ingest it; the first collection's default embedding model, read by
  // the statement, may still send it to the job runner.
  const local = localIngestionFor(deps, { mediaType: mimeType, bytes: bytes.length, embeddingModel: options.embedding_model ?? fallbackModel });
  let written: Awaited<ReturnType<typeof insertUpload>>;
  try {
    written = await insertUpload(deps.sql, {
      tenantId,
      documentId,
      jobId,
      name: input.name,
      category,
      mimeType,
      sizeBytes: bytes.length,
      contentHash: createHash('sha256').update(bytes).digest('hex'),
      actorName: actor.name,
      actorType: actor.type,
      actorId: actor.id,
      collectionIds,
      options,
      content: bytes,
      auditDetails: { name: input.name, mime_type: mimeType, size_bytes: bytes.length, job_id: jobId, collection_ids: collectionIds },
      ownerId: local ? LOCAL_OWNER : null,
    });
  } catch (err) {
    // The statement may have committed although its answer was lost: a job row owned by this live
    // process would wait for nobody.
    local?.handOver(jobId);
    throw err;
  }
  if (!written.stored) {
    const found = new Set(written.collections.map((c) => c.id));
    throw new AppError('NOT_FOUND', 'Collection not found', { collection_id: collectionIds.find((id) => !found.has(id)) });
  }
  if (local && written.ownerId !== null) {
    const settings = settleIngestionSettings(options, written.collections, fallbackModel);
    if (settings.embedding_model === null) local.push({ jobId, tenantId, documentId, content: bytes, mimeType, settings });
    else local.handOver(jobId);
  }
  return { jobId, status: 'pending' as const };
}

// ------------------------------------------------------------------ reads

export async function listDocuments(
  em: EntityManager,
  tenantId: string,
  filter: { collectionId?: string; category?: string },
  page: { limit: number; offset: number },
): Promise<{ documents: DocumentDto[]; pagination: Pagination }> {
  // An id that cannot be a collection matches no document.
  if (filter.collectionId !== undefined && !isUuid(filter.collectionId)) return { documents: [], pagination: { total: 0, ...page } };
  const total = await countDocuments(em, tenantId, filter);
  const rows = await selectDocumentRows(em, tenantId, filter, page);
  return { documents: rows.map(toDocumentDto), pagination: { total, ...page } };
}

/** One document of the tenant; missing, malformed and other tenants' ids are all 404. */
export async function getDocument(em: EntityManager, tenantId: string, id: string) {
  if (!isUuid(id)) throw notFound('Document');
  const row = await selectDocumentRow(em, tenantId, id);
  if (!row) throw notFound('Document');
  return { document: toDocumentDto(row) };
}

// ------------------------------------------------------------------ delete

/**
 * Deletes a document: its chunks and collection references go with it at once (cascade), and an
 * ingestion still under way is cancelled.
 */
export async function deleteDocument(em: EntityManager, tenantId: string, actor: Actor, id: string) {
  if (!isUuid(id)) throw notFound('Document');
  await em.transactional(async (tx) => {
    // Job rows first, then the document: the same order as the ingestion task, so no deadlock.
    await lockDocumentIngestionJobs(tx, tenantId, id);
    const document = await lockDocument(tx, tenantId, id);
    if (!document) throw notFound('Document');
    await cancelDocumentIngestionJobs(tx, id);
    await deleteDocumentRow(tx, id);
    await recordAuditNow(tx, tenantId, actor, { action: 'document.deleted', targetType: 'document', targetId: id, details: { name: document.name } });
  });
}

// ------------------------------------------------------------------ collection references

async function lockCollection(tx: EntityManager, tenantId: string, id: string) {
  if (!isUuid(id)) throw notFound('Collection');
  const collection = await lockCollectionRow(tx, tenantId, id);
  if (!collection) throw notFound('Collection');
  return collection;
}

async function requireDocument(tx: EntityManager, tenantId: string, id: string) {
  if (!isUuid(id)) throw notFound('Document');
  const document = await selectDocumentName(tx, tenantId, id);
  if (!document) throw notFound('Document');
  return document;
}

/** Adds a collection reference; adding one that exists changes nothing. */
export async function attachDocument(em: EntityManager, tenantId: string, actor: Actor, collectionId: string, documentId: string, role: Role) {
  await em.transactional(async (tx) => {
    const collection = await lockCollection(tx, tenantId, collectionId);
    assertMayChangeCollection(collection, { role });
    const document = await requireDocument(tx, tenantId, documentId);
    if (!(await addDocumentCollection(tx, tenantId, document.id, collection.id))) return;
    await recordAuditNow(tx, tenantId, actor, { action: 'collection.document_attached', targetType: 'collection', targetId: collection.id, details: { slug: collection.slug, document_id: document.id, document_name: document.name } });
  });
  return getDocument(em, tenantId, documentId);
}

/** Removes a collection reference (404 when the document is not in the collection); the document stays. */
export async function detachDocument(em: EntityManager, tenantId: string, actor: Actor, collectionId: string, documentId: string, role: Role) {
  await em.transactional(async (tx) => {
    const collection = await lockCollection(tx, tenantId, collectionId);
    assertMayChangeCollection(collection, { role });
    const document = await requireDocument(tx, tenantId, documentId);
    if (!(await deleteDocumentCollection(tx, document.id, collection.id))) throw new AppError('NOT_FOUND', 'The document is not in this collection', { document_id: document.id });
    await recordAuditNow(tx, tenantId, actor, { action: 'collection.document_detached', targetType: 'collection', targetId: collection.id, details: { slug: collection.slug, document_id: document.id, document_name: document.name } });
  });
  return getDocument(em, tenantId, documentId);
}
