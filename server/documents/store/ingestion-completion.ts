// An ingestion's completion in one statement: the job row (completed, its stored bytes dropped, no
// longer owned by a process), the document's chunks (upserted at ordinals 0..n-1, rows past the
// last deleted) and the document (ready). This module writes those tables only here; every other
// write goes through their own stores (ingestion-jobs.ts, document-chunks.ts, documents.ts).
//
// Exactly once: the update of the job row is the statement's gate. It takes the row's lock, so a
// cancel, a delete or another run of the same job either went first (the row is no longer pending
// or running, nothing is written) or waits for this one (and then finds the job completed). The
// other parts write only when the gate returned the row.
//
// Raw SQL on the SqlPool, as named prepared statements (one text per pgvector variant): a CTE of
// writes over unnest()ed arrays with to_tsvector and an upsert, which neither the entities nor
// Kysely can say.
import type { SqlPool } from '../../../db/sql-pool.js';

export interface IngestionCompletion {
  jobId: string;
  tenantId: string;
  documentId: string;
  chunks: { text: string; locator: string | null }[];
  /** Float32 little-endian bytes per chunk (embed-chunks.ts encodeEmbedding), null when not embedded. */
  embeddings: Buffer[] | null;
  /** pgvector's text form of each vector (knowledge/pgvector.ts toVectorLiteral), when they go in embedding_vector. */
  vectorLiterals: string[] | null;
  result: Record<string, unknown>;
  characters: number;
  pages: number | null;
  embeddingModel: string | null;
  /** When the run began (a job run in its accepting process is never marked running on the way). */
  startedAt: Date | null;
  /**
   * A run by the process that accepted the upload (owner_id set, no graphile job): its commit is
   * asynchronous (synchronous_commit off). A crash can only lose the whole completion; the job row
   * is then still pending under the dead process, and the recovery sweep queues it to run again.
   * (A run by the job runner commits synchronously: graphile-worker deletes its job afterwards.)
   */
  local: boolean;
}

/** `column`: the database has embedding_vector (pgvector); `write`: the vectors go in it (else it is nulled). */
function completionSql(vector: { column: boolean; write: boolean }): string {
  const vectorColumn = vector.write ? 'embedding_vector, ' : '';
  const vectorValue = vector.write ? 'c.vector::vector, ' : '';
  const vectorArray = vector.write ? ', $14::text[]' : '';
  const vectorName = vector.write ? ', vector' : '';
  const vectorUpdate = vector.column ? `, embedding_vector = ${vector.write ? 'excluded.embedding_vector' : 'null'}` : '';
  // Raw(pgvector): the pgvector column (no entity maps it) and the chunks' to_tsvector, written
  // from unnest()ed arrays in one CTE.
  return `
  with job as (
    update ingestion_jobs
       set status = 'completed', stage = 'completed', progress = 100, result = $7::jsonb, error_message = null, content = null,
           started_at = coalesce(started_at, $12::timestamptz, now()), completed_at = now(), owner_id = null
     where id = $1 and status in ('pending', 'running')
    returning id
  ), chunks as (
    insert into document_chunks (id, tenant_id, document_id, ordinal, text, characters, locator, search_vector, embedding, ${vectorColumn}created_at)
    select gen_random_uuid(), $2, $3, c.ordinal - 1, c.text, c.characters, c.locator, to_tsvector('english', unaccent(c.text)), c.embedding, ${vectorValue}now()
      from unnest($4::text[], $5::int[], $6::text[], $13::bytea[]${vectorArray}) with ordinality as c(text, characters, locator, embedding${vectorName}, ordinal)
     where exists (select 1 from job)
    on conflict (document_id, ordinal) do update set text = excluded.text, characters = excluded.characters, locator = excluded.locator,
      search_vector = excluded.search_vector, embedding = excluded.embedding${vectorUpdate}
  ), stale as (
    delete from document_chunks where document_id = $3 and ordinal >= cardinality($4::text[]) and exists (select 1 from job)
  ), doc as (
    update documents set status = 'ready', characters = $8, pages = $9, chunk_count = cardinality($4::text[]), embedding_model = $10, updated_at = now()
     where id = $3 and exists (select 1 from job)
  )
  -- A local run's commit need not wait for the WAL flush (set_config(..., true) lasts until this statement's commit).
  select (select count(*)::int from job) as completed,
         case when $11::boolean then set_config('synchronous_commit', 'off', true) end as commit_mode`;
}

/** The statement's text per prepared name (built once). */
const COMPLETION_SQL: Record<string, string> = {};

/**
 * Completes a pending or running job with its chunks; false when the job was no longer pending or
 * running (cancelled, failed, or completed by another run): then nothing was written.
 */
export async function completeIngestion(sql: SqlPool, completion: IngestionCompletion, vector: { column: boolean }): Promise<boolean> {
  const write = vector.column && completion.vectorLiterals !== null;
  const params: unknown[] = [
    completion.jobId,
    completion.tenantId,
    completion.documentId,
    completion.chunks.map((c) => c.text),
    // JavaScript's length, as every other writer of document_chunks.characters counts.
    completion.chunks.map((c) => c.text.length),
    completion.chunks.map((c) => c.locator),
    JSON.stringify(completion.result),
    completion.characters,
    completion.pages,
    completion.embeddingModel,
    completion.local,
    completion.startedAt,
    completion.embeddings ?? completion.chunks.map(() => null),
  ];
  if (write) params.push(completion.vectorLiterals);
  const name = `ingestion-complete${vector.column ? (write ? '-vector' : '-vector-null') : ''}`;
  const text = (COMPLETION_SQL[name] ??= completionSql({ column: vector.column, write }));
  const [row] = await sql.query<{ completed: number }>(text, params, name);
  return row.completed > 0;
}
