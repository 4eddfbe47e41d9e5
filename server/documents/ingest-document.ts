// The ingestion pipeline behind the `ingest_document` task: extracting -> chunking -> embedding ->
// indexing. Every run starts from the job row, so the task is idempotent: a finished job is left
// alone, a job interrupted by a crash runs again from the stored upload, and chunks are written
// with an upsert on (document_id, ordinal) in the same transaction that completes the job.
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { chunkDocument, type TextChunk } from './chunk-text.js';
import { embedTexts, encodeEmbedding } from './embed-chunks.js';
import { toVectorLiteral } from '../knowledge/pgvector.js';
import { extractText, UnreadableDocumentError } from './extract-text.js';
import { resolveIngestionSettings, type IngestionJobOptions } from './ingestion-options.js';

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
const INSERT_ROWS = 100;

interface ClaimedJob {
  tenant_id: string;
  document_id: string | null;
  options: IngestionJobOptions;
}

/**
 * Moves a running job to the next stage. False when the job is no longer running (cancelled, or
 * finished by another run): the caller stops.
 */
async function advance(em: EntityManager, jobId: string, stage: string, progress: number): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `update ingestion_jobs set stage = ?, progress = greatest(progress, ?) where id = ? and status = 'running' returning id`,
    [stage, progress, jobId],
  );
  return rows.length > 0;
}

/** Fails a job that is still pending or running: its document is marked failed and keeps no chunks. */
export async function failIngestionJob(em: EntityManager, jobId: string, message: string): Promise<void> {
  await em.transactional(async (tx) => {
    const [job] = await tx.execute<{ status: string; document_id: string | null }[]>('select status, document_id from ingestion_jobs where id = ? for update', [jobId]);
    if (!job || (job.status !== 'pending' && job.status !== 'running')) return;
    if (job.document_id) {
      await tx.execute('delete from document_chunks where document_id = ?', [job.document_id]);
      await tx.execute(`update documents set status = 'failed', chunk_count = 0, updated_at = now() where id = ?`, [job.document_id]);
    }
    await tx.execute(
      `update ingestion_jobs set status = 'failed', error_message = ?, content = null, completed_at = now() where id = ?`,
      [message.slice(0, 2000), jobId],
    );
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

async function writeChunks(tx: EntityManager, tenantId: string, documentId: string, chunks: TextChunk[], vectors: Float32Array[] | null, pgvector: boolean) {
  // With pgvector, the embedding is also written in its vector column (see knowledge/pgvector.ts).
  const withVector = pgvector && vectors !== null;
  for (let start = 0; start < chunks.length; start += INSERT_ROWS) {
    const slice = chunks.slice(start, start + INSERT_ROWS);
    const values: string[] = [];
    const params: unknown[] = [];
    slice.forEach((chunk, i) => {
      const ordinal = start + i;
      values.push(`(gen_random_uuid(), ?, ?, ?, ?, ?, ?, to_tsvector('english', unaccent(?)), ?, ${withVector ? '?::vector, ' : ''}now())`);
      params.push(tenantId, documentId, ordinal, chunk.text, chunk.text.length, chunk.locator, chunk.text, vectors ? encodeEmbedding(vectors[ordinal]) : null);
      if (withVector) params.push(toVectorLiteral(vectors[ordinal]));
    });
    // An earlier, interrupted run may have left rows: they are overwritten, never duplicated.
    await tx.execute(
      `insert into document_chunks (id, tenant_id, document_id, ordinal, text, characters, locator, search_vector, embedding, ${withVector ? 'embedding_vector, ' : ''}created_at)
       values ${values.join(', ')}
       on conflict (document_id, ordinal) do update set text = excluded.text, characters = excluded.characters, locator = excluded.locator,
         search_vector = excluded.search_vector, embedding = excluded.embedding${pgvector ? `, embedding_vector = ${withVector ? 'excluded.embedding_vector' : 'null'}` : ''}`,
      params,
    );
  }
  await tx.execute('delete from document_chunks where document_id = ? and ordinal >= ?', [documentId, chunks.length]);
}

async function ingest(deps: Pick<AppDeps, 'orm' | 'llm' | 'config' | 'pgvector'>, em: EntityManager, jobId: string, job: ClaimedJob & { document_id: string }, options: RunIngestionOptions): Promise<IngestionOutcome> {
  const [stored] = await em.execute<{ content: Buffer | null }[]>('select content from ingestion_jobs where id = ?', [jobId]);
  if (!stored?.content) {
    await failIngestionJob(em, jobId, 'The uploaded file is no longer available');
    return 'failed';
  }

  let settings = job.options.resolved;
  if (!settings) {
    settings = await resolveIngestionSettings(em, job.tenant_id, job.options, deps.config.EMBEDDING_MODEL ?? null);
    await em.execute(`update ingestion_jobs set options = options || jsonb_build_object('resolved', ?::jsonb) where id = ?`, [JSON.stringify(settings), jobId]);
  }

  const extracted = await extractText(stored.content, job.options.mime_type);
  if (!(await advance(em, jobId, 'chunking', PROGRESS.chunking))) return 'cancelled';

  const chunks = chunkDocument(extracted, settings.chunking);
  if (!chunks.length) throw new UnreadableDocumentError('No text could be extracted from the file');

  let vectors: Float32Array[] | null = null;
  let embeddingModel: string | null = null;
  if (settings.embedding_model) {
    if (!(await advance(em, jobId, 'embedding', PROGRESS.embedding))) return 'cancelled';
    const embedded = await embedTexts(em, deps.llm, chunks.map((c) => c.text), {
      tenantId: job.tenant_id,
      model: settings.embedding_model,
      batchSize: options.batchSize,
      onBatch: (done, total) => advance(em, jobId, 'embedding', PROGRESS.embedding + Math.floor((EMBEDDING_SPAN * done) / total)),
    });
    if (!embedded) return 'cancelled';
    vectors = embedded.vectors;
    embeddingModel = embedded.model;
  }
  if (!(await advance(em, jobId, 'indexing', PROGRESS.indexing))) return 'cancelled';

  const characters = chunks.length ? extracted.text.length : 0;
  const result = {
    chunks: chunks.length,
    characters,
    pages: extracted.pages,
    embedded: vectors !== null,
    embedding_model: embeddingModel,
    chunking: settings.chunking,
    ...(vectors ? {} : { note: 'No embedding model is configured: the chunks are indexed for full-text search only' }),
  };
  return em.transactional(async (tx) => {
    // The job row lock orders this against a cancel or a concurrent run of the same job.
    const [current] = await tx.execute<{ status: string }[]>('select status from ingestion_jobs where id = ? for update', [jobId]);
    if (current?.status !== 'running') return current?.status === 'cancelled' ? 'cancelled' : 'skipped';
    await writeChunks(tx, job.tenant_id, job.document_id, chunks, vectors, deps.pgvector);
    await tx.execute(
      `update documents set status = 'ready', characters = ?, pages = ?, chunk_count = ?, embedding_model = ?, updated_at = now() where id = ?`,
      [characters, extracted.pages, chunks.length, embeddingModel, job.document_id],
    );
    await tx.execute(
      `update ingestion_jobs set status = 'completed', stage = 'completed', progress = 100, result = ?::jsonb, error_message = null, content = null, completed_at = now() where id = ?`,
      [JSON.stringify(result), jobId],
    );
    return 'completed' as const;
  });
}

/** Runs (or resumes) one ingestion job; a job that is not pending or running is left as it is. */
export async function runIngestionJob(deps: Pick<AppDeps, 'orm' | 'llm' | 'config' | 'log' | 'pgvector'>, jobId: string, options: RunIngestionOptions = {}): Promise<IngestionOutcome> {
  const em = deps.orm.em.fork();
  const [job] = await em.execute<ClaimedJob[]>(
    `update ingestion_jobs set status = 'running', started_at = coalesce(started_at, now()), stage = 'extracting', progress = greatest(progress, ?)
      where id = ? and status in ('pending', 'running') returning tenant_id, document_id, options`,
    [PROGRESS.extracting, jobId],
  );
  if (!job) return 'skipped';
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
