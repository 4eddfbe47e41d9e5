// The ingestion pipeline behind the `ingest_document` task: extracting -> chunking -> embedding ->
// indexing. Every run starts from the job row, so the task is idempotent: a finished job is left
// alone, a job interrupted by a crash runs again from the stored upload, and chunks are written
// with an upsert on (document_id, ordinal) in the same statement that completes the job
// (store/ingestion-completion.ts). A small text document is ingested by the process that accepted
// it, right after its upload commits (local-ingestion.ts): `runLocalIngestion` below.
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { chunkDocument, type TextChunk } from './chunk-text.js';
import { embedTexts, encodeEmbedding } from './embed-chunks.js';
import { toVectorLiteral } from '../knowledge/pgvector.js';
import { extractText, UnreadableDocumentError } from './extract-text.js';
import { resolveIngestionSettings, type IngestionJobOptions } from './ingestion-options.js';
import type { SupportedMediaType } from './media-types.js';
import { deleteDocumentChunks } from './store/document-chunks.js';
import { markDocumentFailed } from './store/documents.js';
import { completeIngestion } from './store/ingestion-completion.js';
import {
  advanceIngestionJob, claimIngestionJob, lockIngestionJob, markIngestionJobFailed, saveResolvedIngestionSettings, selectIngestionJobContent,
  selectIngestionJobStatus,
} from './store/ingestion-jobs.js';

export type IngestionOutcome = 'completed' | 'failed' | 'cancelled' | 'skipped';

export interface RunIngestionOptions {
  /** Texts per embeddings call (default 64). */
  batchSize?: number;
  /**
   * Whether no retry follows this run (default true). When false, transient failures (provider
   * down, database errors) are thrown for the job runner to retry; unreadable files fail at once.
   */
  finalAttempt?: boolean;
}

// Progress at the start of each stage; embedding fills 35 -> 85 batch by batch.
const PROGRESS = { extracting: 5, chunking: 25, embedding: 35, indexing: 90 } as const;
const EMBEDDING_SPAN = 50;
/**
 * The stage while an embeddings batch waits out a rate limit or an outage (PROVIDER_PATIENCE_MS);
 * the next batch done sets `embedding` again.
 */
const EMBEDDING_WAITING = 'embedding (waiting for provider)';

interface ClaimedJob {
  tenant_id: string;
  document_id: string | null;
  options: IngestionJobOptions;
}

/** Fails a job that is still pending or running: its document is marked failed and keeps no chunks. */
async function failIngestionJob(em: EntityManager, jobId: string, message: string): Promise<void> {
  await em.transactional(async (tx) => {
    const job = await lockIngestionJob(tx, jobId);
    if (!job || (job.status !== 'pending' && job.status !== 'running')) return;
    if (job.document_id) {
      await deleteDocumentChunks(tx, job.document_id);
      await markDocumentFailed(tx, job.document_id);
    }
    await markIngestionJobFailed(tx, jobId, message.slice(0, 2000));
  });
}

/** Errors that another attempt cannot fix. */
function isPermanent(err: unknown): boolean {
  if (err instanceof UnreadableDocumentError) return true;
  if (!(err instanceof AppError)) return false;
  if (err.code === 'LLM_NOT_CONFIGURED') return true;
  const status = err.details?.status;
  return err.code === 'LLM_PROVIDER_ERROR' && typeof status === 'number' && status >= 400 && status < 500 && ![408, 409, 429].includes(status);
}

function failureMessage(err: unknown): string {
  if (err instanceof UnreadableDocumentError || err instanceof AppError) return err.message;
  return 'An internal error stopped the ingestion';
}

/** The job's result, as GET /dashboard/ingestion-jobs/{id} shows it. */
function ingestionResult(chunks: TextChunk[], extracted: { text: string; pages: number | null }, settings: NonNullable<IngestionJobOptions['resolved']>, embeddingModel: string | null) {
  return {
    chunks: chunks.length,
    characters: extracted.text.length,
    pages: extracted.pages,
    embedded: embeddingModel !== null,
    embedding_model: embeddingModel,
    chunking: settings.chunking,
    ...(embeddingModel ? {} : { note: 'No embedding model is configured: the chunks are indexed for full-text search only' }),
  };
}

async function ingest(deps: Pick<AppDeps, 'orm' | 'sql' | 'llm' | 'config' | 'pgvector'>, em: EntityManager, jobId: string, job: ClaimedJob & { document_id: string }, options: RunIngestionOptions): Promise<IngestionOutcome> {
  const content = await selectIngestionJobContent(em, jobId);
  if (!content) {
    await failIngestionJob(em, jobId, 'The uploaded file is no longer available');
    return 'failed';
  }

  let settings = job.options.resolved;
  if (!settings) {
    settings = await resolveIngestionSettings(em, job.tenant_id, job.options, deps.config.EMBEDDING_MODEL ?? null);
    await saveResolvedIngestionSettings(em, jobId, settings);
  }

  const extracted = await extractText(content, job.options.mime_type);
  if (!(await advanceIngestionJob(em, jobId, 'chunking', PROGRESS.chunking))) return 'cancelled';

  const chunks = chunkDocument(extracted, settings.chunking);
  if (!chunks.length) throw new UnreadableDocumentError('No text could be extracted from the file');

  let vectors: Float32Array[] | null = null;
  let embeddingModel: string | null = null;
  if (settings.embedding_model) {
    if (!(await advanceIngestionJob(em, jobId, 'embedding', PROGRESS.embedding))) return 'cancelled';
    const embedded = await embedTexts(em, deps.llm, chunks.map((c) => c.text), {
      tenantId: job.tenant_id,
      model: settings.embedding_model,
      batchSize: options.batchSize,
      onBatch: (done, total) => advanceIngestionJob(em, jobId, 'embedding', PROGRESS.embedding + Math.floor((EMBEDDING_SPAN * done) / total)),
      patienceMs: deps.config.PROVIDER_PATIENCE_MS,
      onWait: () => advanceIngestionJob(em, jobId, EMBEDDING_WAITING, PROGRESS.embedding),
    });
    if (!embedded) return 'cancelled';
    vectors = embedded.vectors;
    embeddingModel = embedded.model;
  }
  if (!(await advanceIngestionJob(em, jobId, 'indexing', PROGRESS.indexing))) return 'cancelled';

  const completed = await completeIngestion(
    deps.sql,
    {
      jobId,
      tenantId: job.tenant_id,
      documentId: job.document_id,
      chunks,
      embeddings: vectors ? vectors.map(encodeEmbedding) : null,
      // With pgvector, the embedding is also written in its vector column (see knowledge/pgvector.ts).
      vectorLiterals: vectors && deps.pgvector ? vectors.map(toVectorLiteral) : null,
      result: ingestionResult(chunks, extracted, settings, embeddingModel),
      characters: extracted.text.length,
      pages: extracted.pages,
      embeddingModel,
      startedAt: null,
      local: false,
    },
    { column: deps.pgvector },
  );
  if (completed) return 'completed';
  return (await selectIngestionJobStatus(em, jobId)) === 'cancelled' ? 'cancelled' : 'skipped';
}

/** Runs (or resumes) one ingestion job; a job that is not pending or running is left as it is. */
export async function runIngestionJob(deps: Pick<AppDeps, 'orm' | 'sql' | 'llm' | 'config' | 'log' | 'pgvector'>, jobId: string, options: RunIngestionOptions = {}): Promise<IngestionOutcome> {
  const em = deps.orm.em.fork();
  const claimed = await claimIngestionJob(em, jobId, PROGRESS.extracting);
  if (!claimed) return 'skipped';
  const job: ClaimedJob = { tenant_id: claimed.tenant_id, document_id: claimed.document_id, options: claimed.options as unknown as IngestionJobOptions };
  if (!job.document_id) {
    await failIngestionJob(em, jobId, 'The document was deleted before it was ingested');
    return 'failed';
  }
  try {
    return await ingest(deps, em, jobId, { ...job, document_id: job.document_id }, options);
  } catch (err) {
    if (!isPermanent(err) && options.finalAttempt === false) throw err;
    if (!isPermanent(err)) deps.log.error({ err, jobId }, 'ingestion job failed');
    await failIngestionJob(em, jobId, failureMessage(err));
    return 'failed';
  }
}

/** What the accepting process holds of an upload it ingests itself (local-ingestion.ts). */
export interface LocalIngestion {
  jobId: string;
  tenantId: string;
  documentId: string;
  content: Buffer;
  mimeType: SupportedMediaType;
  /** Settled at the upload; no embedding model (a document to embed goes to the job runner). */
  settings: NonNullable<IngestionJobOptions['resolved']>;
}

/**
 * Ingests an upload in the process that accepted it: extract, chunk, then one statement completes
 * the job (and ends this process's ownership of it), writes the chunks and marks the document
 * ready. The job is pending until then, and reads completed, stage and progress included, right
 * after: it is never marked running on the way (a text document takes milliseconds, and each stage
 * write would be a round trip and a commit). An unreadable file fails the job at once. Any other
 * error is thrown: the caller hands the job to the job runner, which retries it.
 */
export async function runLocalIngestion(deps: Pick<AppDeps, 'orm' | 'sql' | 'pgvector'>, item: LocalIngestion): Promise<IngestionOutcome> {
  const startedAt = new Date();
  let chunks: TextChunk[];
  let extracted: { text: string; pages: number | null };
  try {
    extracted = await extractText(item.content, item.mimeType);
    chunks = chunkDocument(extracted, item.settings.chunking);
    if (!chunks.length) throw new UnreadableDocumentError('No text could be extracted from the file');
  } catch (err) {
    if (!(err instanceof UnreadableDocumentError)) throw err;
    await failIngestionJob(deps.orm.em.fork(), item.jobId, err.message);
    return 'failed';
  }
  const completed = await completeIngestion(
    deps.sql,
    {
      jobId: item.jobId,
      tenantId: item.tenantId,
      documentId: item.documentId,
      chunks,
      embeddings: null,
      vectorLiterals: null,
      result: ingestionResult(chunks, extracted, item.settings, null),
      characters: extracted.text.length,
      pages: extracted.pages,
      embeddingModel: null,
      startedAt,
      local: true,
    },
    { column: deps.pgvector },
  );
  return completed ? 'completed' : 'skipped';
}
