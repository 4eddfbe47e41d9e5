// The pgvector extension and the document_chunks.embedding_vector column (schema, not rows: the
// documents feature writes the chunks, see server/documents/store/document-chunks.ts). Raw:
// extension catalogs and DDL are beyond Kysely's typed tables; run through the SqlPool at start-up
// and, for the per-dimension HNSW indexes, when retrieval first needs one.
import type { SqlPool } from '../../../db/sql-pool.js';

/** Whether the `vector` extension is available to this database, and whether it is created. */
export async function selectVectorExtensionState(sql: SqlPool): Promise<{ available: boolean; installed: boolean }> {
  const [state] = await sql.query<{ available: boolean; installed: boolean }>(
    `select exists (select 1 from pg_available_extensions where name = 'vector') as available,
            exists (select 1 from pg_extension where extname = 'vector') as installed`,
  );
  return state;
}

/** Whether the `vector` extension is created (undefined: no answer row). */
export async function selectVectorExtensionInstalled(sql: SqlPool): Promise<boolean | undefined> {
  const [now] = await sql.query<{ installed: boolean }>(`select exists (select 1 from pg_extension where extname = 'vector') as installed`);
  return now?.installed;
}

/** Creates the `vector` extension unless it exists (needs a role allowed to). */
export async function createVectorExtension(sql: SqlPool): Promise<void> {
  await sql.query('create extension if not exists vector');
}

/** Adds document_chunks.embedding_vector unless it exists. */
export async function addEmbeddingVectorColumn(sql: SqlPool): Promise<void> {
  await sql.query('alter table document_chunks add column if not exists embedding_vector vector');
}

/** The name of the approximate (HNSW) index of the `dimensions`-value vectors. */
const vectorIndexName = (dimensions: number) => `document_chunks_embedding_hnsw_${dimensions}`;

/**
 * The HNSW index (cosine distance) of the chunks whose vector has `dimensions` values: an index
 * needs a fixed dimension and the column has none, so there is one partial index per dimension in
 * use, on the vector cast to that dimension. Built concurrently: writes to document_chunks go on.
 */
export function vectorIndexDdl(dimensions: number): string {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 16_000) throw new Error(`invalid vector dimension ${dimensions}`);
  return `create index concurrently if not exists ${vectorIndexName(dimensions)} on document_chunks
    using hnsw ((embedding_vector::vector(${dimensions})) vector_cosine_ops) where vector_dims(embedding_vector) = ${dimensions}`;
}

/**
 * Whether the HNSW index of `dimensions` exists and is usable (valid: false while it is being built
 * or after a failed build; null: no such index), the vectors it holds (as of the last vacuum,
 * analyze or build), and pgvector's version.
 */
export async function selectVectorIndexState(sql: SqlPool, dimensions: number): Promise<{ valid: boolean | null; tuples: number | null; version: string | null }> {
  // Raw: system catalogs.
  const [row] = await sql.query<{ valid: boolean | null; tuples: number | null; version: string | null }>(
    `select x.indisvalid as valid, greatest(i.reltuples, 0)::float8 as tuples, (select extversion from pg_extension where extname = 'vector') as version
       from (select 1) one
       left join pg_class i on i.relname = $1 and i.relnamespace = current_schema()::regnamespace
       left join pg_index x on x.indexrelid = i.oid`,
    [vectorIndexName(dimensions)],
  );
  return row ?? { valid: null, tuples: null, version: null };
}

/** Builds the HNSW index of `dimensions` unless it exists (minutes for a million chunks; writes go on meanwhile). */
export async function createVectorIndex(sql: SqlPool, dimensions: number): Promise<void> {
  await sql.query(vectorIndexDdl(dimensions));
}
